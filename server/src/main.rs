//! `r2r`: the desk's single binary. See `r2r --help`.

fn main() -> std::process::ExitCode {
    server::cli::main()
}
