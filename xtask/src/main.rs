//! ngcc-repro: `cargo xtask <command>`. One module per command, each with a
//! `run(self, sh)` entry; see `flags.rs` for the interface.

mod bench;
mod builder;
mod campaign;
mod doctor;
mod emulation;
mod engine;
mod env;
mod evidence;
mod flags;
#[cfg(test)]
mod fuzz;
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
mod sha;
mod sizes;
mod sources;
mod stats;
mod submission;
mod systems;
mod toolchain;
mod verify;

use anyhow::{Context, Result};
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
    let mut flags = flags::Xtask::parse();
    let root = project::locate_root()?;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let cwd = camino::Utf8PathBuf::from_path_buf(cwd)
        .map_err(|p| anyhow::anyhow!("non-UTF-8 working directory {}", p.display()))?;
    flags.resolve_paths(&cwd);
    // std::fs and xshell then agree: every path is absolute or relative to the root.
    std::env::set_current_dir(&root).with_context(|| format!("cannot enter {root}"))?;
    interrupt::install();
    let sh = Shell::new()?;
    sh.change_dir(&root);
    match flags.cmd {
        Cmd::List(cmd) => cmd.run(&sh),
        Cmd::Image(ImageCmd::Build(cmd)) => cmd.run(&sh),
        Cmd::Image(ImageCmd::Check(cmd)) => cmd.run(&sh),
        Cmd::Verify(cmd) => cmd.run(&sh),
        Cmd::Bench(cmd) => cmd.run(&sh),
        Cmd::Env(cmd) => cmd.run(&sh),
        Cmd::Doctor(cmd) => cmd.run(&sh),
        Cmd::Evidence(EvidenceCmd::Check(cmd)) => cmd.run(&sh),
        Cmd::Evidence(EvidenceCmd::Index(cmd)) => cmd.run(&sh),
        Cmd::Merge(cmd) => cmd.run(&sh),
        Cmd::Campaign(cmd) => cmd.run(&sh),
        Cmd::Report(cmd) => cmd.run(&sh),
    }
}
