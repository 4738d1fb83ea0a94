//! ngcc-repro: `cargo xtask <command>`. One module per command, each with a
//! `run(self, sh)` entry; see `flags.rs` for the interface.

fn main() {
    if let Err(e) = xtask::run() {
        if xtask::container::interrupt::is_set() {
            eprintln!("{}", xtask::container::interrupt::Interrupted);
            std::process::exit(130);
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}
