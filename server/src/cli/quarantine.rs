//! `r2r quarantine …`: reports the airlock set aside, by metadata only (their text was never kept).
use super::load_config;
use clap::Subcommand;
use std::process::ExitCode;

#[derive(Subcommand, Debug)]
pub enum QuarantineCommand {
    /// The newest quarantined reports: id, time, component, families hit, contact.
    List {
        /// How many.
        #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
    },
    /// Send the reporter a message; it appears on their tracking page.
    Message {
        /// The report id.
        #[arg(long)]
        report: String,
        /// The owner writing (an email address).
        #[arg(long, value_name = "EMAIL")]
        from: String,
        /// The message.
        #[arg(long)]
        text: String,
    },
}

pub async fn quarantine(
    env_file: &std::path::Path,
    command: QuarantineCommand,
) -> anyhow::Result<ExitCode> {
    let config = load_config(env_file, None)?;
    let store = store::Store::connect(&config.database_url).await?;
    store.migrate().await?;
    match command {
        QuarantineCommand::List { limit } => {
            let queue = store.quarantine_queue(limit).await?;
            if queue.is_empty() {
                println!("no quarantined reports");
            }
            for report in queue {
                println!(
                    "{}  {}  {:<10}  families: {:<40}  contact: {}",
                    report.id,
                    app::net::format_time(report.created_at),
                    report.component,
                    report.families.join(","),
                    report.contact.as_deref().unwrap_or("-")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        QuarantineCommand::Message { report, from, text } => {
            if !crate::config::looks_like_email(&from) {
                anyhow::bail!("--from is invalid: expected an email address, got {from:?}");
            }
            let text = text.trim();
            if text.is_empty() || text.chars().count() > 4000 {
                anyhow::bail!("--text is invalid: write 1 to 4000 characters");
            }
            match store
                .add_report_message(&report, &from, text, crate::clock::now_ms())
                .await?
            {
                Some(seq) => {
                    println!("message {seq} recorded for report {report}; it shows on the reporter's tracking page");
                    Ok(ExitCode::SUCCESS)
                }
                None => {
                    eprintln!("error: no report {report}");
                    Ok(ExitCode::from(1))
                }
            }
        }
    }
}
