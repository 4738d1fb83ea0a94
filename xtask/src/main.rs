//! ngcc-repro: `cargo xtask <command>`. One module per command, each with a
//! `run(self, sh)` entry; see `flags.rs` for the interface and `ui.rs` for exit codes.

fn main() {
    if let Err(e) = xtask::run() {
        let code = xtask::ui::exit_code(&e);
        xtask::ui::emit_error(&e);
        if code == xtask::ui::exit::INTERRUPTED {
            eprintln!("{}", xtask::container::interrupt::Interrupted);
        } else {
            eprintln!("error: {e:#}");
        }
        std::process::exit(code);
    }
}
