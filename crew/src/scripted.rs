//! The scripted provider: deterministic answers for the seeded bugs of the demo targets
//! (ShopLite's coupon in Rust, Tallybook's split in Python), for the demo and the tests. Every completion says `scripted` (evidence built on it is labelled
//! `simulated demo`), and a prompt outside the script is an error, never a guess.

use crate::guard::{DATAMARK, FILE_END, FILE_START};
use crate::provider::{Completion, ModelError, ModelProvider, Prompt, Task};
use async_trait::async_trait;
use serde_json::json;

/// ShopLite's coupon regression test, as the scripted reproducer writes it.
pub const COUPON_TEST: &str = include_str!("../../shoplite/regressions/coupon_save300.rs");
/// Where it goes in the target.
pub const COUPON_TEST_PATH: &str = "tests/coupon_save300.rs";
/// Its name.
pub const COUPON_TEST_NAME: &str = "save300_on_a_200_rupee_cart_is_free_not_negative";

/// Tallybook's split regression test, as the scripted reproducer writes it.
pub const SPLIT_TEST: &str = include_str!("../../tallybook/regressions/test_split_adds_up.py");
/// Where it goes in the target.
pub const SPLIT_TEST_PATH: &str = "tests/test_split_adds_up.py";
/// Its name.
pub const SPLIT_TEST_NAME: &str = "test_three_way_split_of_100_rupees_adds_up_to_the_bill";
/// The file the split fix changes.
pub const SPLIT_SOURCE_PATH: &str = "tallybook/split.py";
/// The reporter-facing summary of the split bug.
pub const SPLIT_SUMMARY: &str = "Splitting ₹100 between three people gives three shares of ₹33.33, which add up to ₹99.99: one paisa of the bill belongs to nobody. You expected the shares to add up to ₹100.00.";

const SPLIT_BUG: &str =
    "    share = total.paise // people\n    return [Money(share) for _ in range(people)]\n";
const SPLIT_FIXED: &str = "    share, left = divmod(total.paise, people)\n    # The first `left` people carry one paisa more, so the shares add up to the bill.\n    return [Money(share + (1 if i < left else 0)) for i in range(people)]\n";

/// Tallybook's `split.py` with the split bug fixed, or `None` when the bug is not in it.
pub fn fix_split(source: &str) -> Option<String> {
    source
        .contains(SPLIT_BUG)
        .then(|| source.replacen(SPLIT_BUG, SPLIT_FIXED, 1))
}

/// The scripted provider.
#[derive(Clone, Debug, Default)]
pub struct Scripted;

/// The text of `path` inside a prompt (`--- FILE path ---` … `--- END FILE ---`).
pub fn file_in_prompt<'a>(prompt: &'a str, path: &str) -> Option<&'a str> {
    let start = format!("{FILE_START}{path} ---\n");
    let from = prompt.find(&start)? + start.len();
    let to = prompt[from..].find(FILE_END)? + from;
    Some(&prompt[from..to])
}

fn about_the_coupon(text: &str) -> bool {
    // It reads datamarked reporter text as a model would: the marks are word breaks.
    let lower = text.replace(DATAMARK, " ").to_lowercase();
    ["save300", "coupon", "discount"]
        .iter()
        .any(|w| lower.contains(w))
        && [
            "negative",
            "below zero",
            "minus",
            "-₹",
            "−₹",
            "-100",
            "refund",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

fn about_the_split(text: &str) -> bool {
    let lower = text.replace(DATAMARK, " ").to_lowercase();
    ["split", "share", "divide"]
        .iter()
        .any(|w| lower.contains(w))
        && [
            "add up", "adds up", "short", "missing", "paisa", "99.99", "lost", "0.01",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

#[async_trait]
impl ModelProvider for Scripted {
    fn name(&self) -> &'static str {
        "scripted"
    }

    fn model(&self) -> &str {
        "scripted-shoplite-1"
    }

    async fn complete(&self, prompt: &Prompt) -> Result<Completion, ModelError> {
        let unscripted = || {
            ModelError::Unscripted(format!(
                "the scripted provider knows ShopLite's coupon bug and Tallybook's split bug only; this {:?} prompt is not about them",
                prompt.task
            ))
        };
        let content = match prompt.task {
            Task::Triage if about_the_coupon(&prompt.user) => json!({
                "severity": "critical",
                "likely_cause": "quote() subtracts the coupon's discount without capping it at the subtotal, so SAVE300 on a smaller cart goes below zero",
                "steps": ["Open the shop", "Put ₹200 of goods in the cart", "Apply coupon SAVE300", "Read the payable total"],
                "test_idea": "quote_form(\"200\", \"1\", \"SAVE300\") must give a payable total of exactly ₹0",
            }),
            Task::Reproduce if about_the_coupon(&prompt.user) => json!({
                "test_path": COUPON_TEST_PATH,
                "test_name": COUPON_TEST_NAME,
                "test_source": COUPON_TEST,
                "summary": shoplite::seeded::BUG1_SUMMARY,
            }),
            Task::Triage if about_the_split(&prompt.user) => json!({
                "severity": "high",
                "likely_cause": "split_evenly rounds every share down with integer division and never hands out the paise left over",
                "steps": ["Add a ₹100 expense", "Split it between three people", "Add up the three shares"],
                "test_idea": "split_evenly(Money.rupees(100), 3) must give shares that add up to 10,000 paise",
            }),
            Task::Reproduce if about_the_split(&prompt.user) => json!({
                "test_path": SPLIT_TEST_PATH,
                "test_name": SPLIT_TEST_NAME,
                "test_source": SPLIT_TEST,
                "summary": SPLIT_SUMMARY,
            }),
            Task::Review if about_the_split(&prompt.user) => json!({
                "matches_expectation": true,
                "notes": "The test asserts the reporter's expectation (three shares of ₹100 add up to ₹100.00) and fails on that assertion against the shipped split.",
            }),
            Task::Fix if file_in_prompt(&prompt.user, SPLIT_SOURCE_PATH).is_some() => {
                let source =
                    file_in_prompt(&prompt.user, SPLIT_SOURCE_PATH).ok_or_else(unscripted)?;
                let fixed = fix_split(source).ok_or_else(unscripted)?;
                json!({
                    "files": [{"path": SPLIT_SOURCE_PATH, "content": fixed}],
                    "summary": "Hand the paise left over by an even split to the first shares, so the shares always add up to the bill",
                })
            }
            Task::Fix => {
                let lib = file_in_prompt(&prompt.user, "src/lib.rs").ok_or_else(unscripted)?;
                let fixed = shoplite::seeded::fix_bug1(lib).ok_or_else(unscripted)?;
                json!({
                    "files": [{"path": "src/lib.rs", "content": fixed}],
                    "summary": "Cap a coupon's discount at the subtotal so the total never goes below zero",
                })
            }
            Task::Review if about_the_coupon(&prompt.user) => json!({
                "matches_expectation": true,
                "notes": "The test asserts the reporter's expectation (₹0 payable for SAVE300 on a ₹200 cart) and fails on that assertion against the shipped shop.",
            }),
            _ => return Err(unscripted()),
        };
        Ok(Completion {
            content: content.to_string(),
            provider: self.name(),
            model: self.model().to_owned(),
            scripted: true,
            prompt_tokens: None,
            completion_tokens: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prompt(task: Task, user: &str) -> Prompt {
        Prompt {
            task,
            system: String::new(),
            user: user.to_owned(),
        }
    }

    #[tokio::test]
    async fn the_script_covers_the_coupon_bug_and_nothing_else() {
        let dossier = "UNTRUSTED REPORTER DATA\ntitle: SAVE300 makes my total negative\n";
        let reproduction = Scripted
            .complete(&prompt(Task::Reproduce, dossier))
            .await
            .unwrap();
        assert!(reproduction.scripted);
        let draft = crate::schema::reproduction(&reproduction.content).unwrap();
        assert_eq!(draft.test_name, COUPON_TEST_NAME);
        assert!(crate::schema::triage(
            &Scripted
                .complete(&prompt(Task::Triage, dossier))
                .await
                .unwrap()
                .content
        )
        .is_ok());
        assert!(matches!(
            Scripted
                .complete(&prompt(Task::Reproduce, "the logo is blurry"))
                .await,
            Err(ModelError::Unscripted(_))
        ));
    }

    #[tokio::test]
    async fn the_script_covers_tallybooks_split_bug_in_python() {
        let dossier = "UNTRUSTED REPORTER DATA\ntitle: Split of ₹100 three ways does not add up\nwhat_happened: each share is ₹33.33, a paisa is missing\n";
        let draft = crate::schema::reproduction(
            &Scripted
                .complete(&prompt(Task::Reproduce, dossier))
                .await
                .unwrap()
                .content,
        )
        .unwrap();
        assert_eq!(draft.test_path, SPLIT_TEST_PATH);
        assert!(draft
            .test_source
            .contains(&format!("def {SPLIT_TEST_NAME}(")));
        let source = include_str!("../../tallybook/tallybook/split.py");
        let user = format!("{FILE_START}{SPLIT_SOURCE_PATH} ---\n{source}{FILE_END}\n");
        let completion = Scripted.complete(&prompt(Task::Fix, &user)).await.unwrap();
        let fix =
            crate::schema::fix(&completion.content, &["tallybook/"], SPLIT_TEST_PATH).unwrap();
        assert!(fix.files[0].content.contains("divmod(total.paise, people)"));
        // Fixed already: nothing left to script.
        let again = format!(
            "{FILE_START}{SPLIT_SOURCE_PATH} ---\n{}{FILE_END}\n",
            fix.files[0].content
        );
        assert!(Scripted.complete(&prompt(Task::Fix, &again)).await.is_err());
        assert!(!about_the_split("the coupon makes my total negative"));
        let triage = Scripted
            .complete(&prompt(Task::Triage, dossier))
            .await
            .unwrap();
        assert!(
            crate::schema::triage(&triage.content).is_ok(),
            "{}",
            triage.content
        );
    }

    #[tokio::test]
    async fn the_scripted_fix_is_whole_file_and_passes_the_schema() {
        let lib = include_str!("../../shoplite/src/lib.rs");
        let user = format!("{FILE_START}src/lib.rs ---\n{lib}{FILE_END}\n");
        let completion = Scripted.complete(&prompt(Task::Fix, &user)).await.unwrap();
        let fix = crate::schema::fix(&completion.content, &["src/"], COUPON_TEST_PATH).unwrap();
        assert!(fix.files[0].content.contains("discount.min("));
        let already_fixed = format!(
            "{FILE_START}src/lib.rs ---\n{}{FILE_END}\n",
            fix.files[0].content
        );
        assert!(Scripted
            .complete(&prompt(Task::Fix, &already_fixed))
            .await
            .is_err());
    }
}
