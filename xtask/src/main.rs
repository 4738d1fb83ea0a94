//! ngcc-repro: `cargo xtask <command>`. One module per command, each with a
//! `run(self, sh)` entry; see `flags.rs` for the interface.

fn main() {
    if let Err(e) = xtask::run() {
        if xtask::interrupt::is_set() {
            eprintln!("{}", xtask::interrupt::Interrupted);
            std::process::exit(130);
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
