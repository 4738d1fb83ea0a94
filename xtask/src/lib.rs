//! ngcc-repro as a library: the commands of `cargo xtask` and the evidence schema
//! they write. The binary (`main.rs`) only dispatches; tests read evidence through
//! the same types (`schema`) the commands write it with.

pub mod campaign;
pub mod campaign_estimate;
pub mod compile;
pub mod container;
pub mod ct;
pub mod doctor;
pub mod evidence;
pub mod family;
pub mod flags;
pub mod kat;
pub mod list;
pub mod lock;
pub mod matrix;
pub mod measure;
pub mod merge;
pub mod onboard;
pub mod pages;
pub mod project;
pub mod sanitize;
pub mod sched;
pub mod sha;
pub mod text;
pub mod ui;

use anyhow::{Context, Result};
use camino::Utf8PathBuf;
use clap::Parser;
use xshell::Shell;

use crate::flags::{Cmd, EvidenceCmd, ImageCmd};

/// The whole command line: parse, find the project root, dispatch.
pub fn run() -> Result<()> {
    let mut flags = flags::Xtask::parse();
    ui::configure(flags.output.options());
    let root = project::locate_root()?;
    let cwd = std::env::current_dir().context("cannot read the working directory")?;
    let cwd = camino::Utf8PathBuf::from_path_buf(cwd)
        .map_err(|p| anyhow::anyhow!("non-UTF-8 working directory {}", p.display()))?;
    flags.resolve_paths(&cwd);
    // std::fs and xshell then agree: every path is absolute or relative to the root.
    std::env::set_current_dir(&root).with_context(|| format!("cannot enter {root}"))?;
    container::interrupt::install();
    let sh = Shell::new()?;
    sh.change_dir(&root);
    let out = flags.cmd.out_dir().filter(|o| !o.exists()).map(Utf8PathBuf::from);
    let result = dispatch(flags.cmd, &sh).map_err(|e| doctor::explain(e, &sh));
    // A run that failed before writing anything leaves no empty --out behind.
    if let (Err(_), Some(out)) = (&result, out) {
        if out.read_dir().is_ok_and(|mut d| d.next().is_none()) {
            std::fs::remove_dir(&out).ok();
        }
    }
    result
}

/// Each command line becomes its command's plain options here, at the edge.
fn dispatch(cmd: Cmd, sh: &Shell) -> Result<()> {
    match cmd {
        Cmd::List(cmd) => list::List::from(cmd).run(sh),
        Cmd::Image(ImageCmd::Build(cmd)) => container::image::ImageBuild::from(cmd).run(sh),
        Cmd::Image(ImageCmd::Check(cmd)) => container::image::ImageCheck::from(cmd).run(sh),
        Cmd::Verify(cmd) => kat::verify::Verify::from(cmd).run(sh),
        Cmd::Bench(cmd) => measure::bench::Bench::from(cmd).run(sh),
        Cmd::Profile(cmd) => measure::profile::Profile::from(cmd).run(sh),
        Cmd::Ct(cmd) => {
            let opts = cmd.options();
            ct::run(sh, &cmd.inputs.into(), &opts)
        }
        Cmd::Sanitize(cmd) => sanitize::Sanitize::from(cmd).run(sh),
        Cmd::Env(cmd) => measure::env::Env::from(cmd).run(sh),
        Cmd::Doctor(cmd) => doctor::Doctor::from(cmd).run(sh),
        Cmd::Evidence(EvidenceCmd::Check(cmd)) => evidence::command::EvidenceCheck::from(cmd).run(sh),
        Cmd::Evidence(EvidenceCmd::Index(cmd)) => evidence::command::EvidenceIndex::from(cmd).run(sh),
        Cmd::Merge(cmd) => merge::Merge::from(cmd).run(sh),
        Cmd::Campaign(cmd) => campaign::Campaign::from(cmd).run(sh),
        Cmd::Report(cmd) => pages::report::Report::from(cmd).run(sh),
        Cmd::Site(cmd) => pages::site::Site::from(cmd).run(sh),
        Cmd::Compare(cmd) => pages::compare::Compare::from(cmd).run(sh),
        Cmd::Onboard(cmd) => onboard::Onboard::from(cmd).run(sh),
    }
}
