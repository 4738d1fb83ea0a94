//! ngcc-repro: `cargo xtask <command>`. One module per command, each with a
//! `run(self, sh)` entry; see `flags.rs` for the interface.

mod bench;
mod builder;
mod campaign;
mod emulation;
mod engine;
mod env;
mod evidence;
mod flags;
mod hostgate;
mod image;
mod interrupt;
mod kat;
mod list;
mod merge;
mod project;
mod recipe;
mod report;
mod sandbox;
mod sizes;
mod sources;
mod stats;
mod submission;
mod systems;
mod toolchain;
mod verify;

use anyhow::Result;
use clap::Parser;
use xshell::Shell;

use crate::flags::{Cmd, EvidenceCmd, ImageCmd};

fn main() {
    if let Err(e) = run() {
        if interrupt::is_set() {
            eprintln!("{}", interrupt::Interrupted);
            std::process::exit(130);
        }
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let flags = flags::Xtask::parse();
    interrupt::install();
    let sh = Shell::new()?;
    sh.change_dir(project::root());
    match flags.cmd {
        Cmd::List(cmd) => cmd.run(&sh),
        Cmd::Image(ImageCmd::Build(cmd)) => cmd.run(&sh),
        Cmd::Image(ImageCmd::Check(cmd)) => cmd.run(&sh),
        Cmd::Verify(cmd) => cmd.run(&sh),
        Cmd::Bench(cmd) => cmd.run(&sh),
        Cmd::Env(cmd) => cmd.run(&sh),
        Cmd::Evidence(EvidenceCmd::Check(cmd)) => cmd.run(&sh),
        Cmd::Evidence(EvidenceCmd::Index(cmd)) => cmd.run(&sh),
        Cmd::Merge(cmd) => cmd.run(&sh),
        Cmd::Campaign(cmd) => cmd.run(&sh),
        Cmd::Report(cmd) => cmd.run(&sh),
    }
}
