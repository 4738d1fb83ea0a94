//! `cargo xtask list`: submissions, instances and toolchains.

use anyhow::Result;
use xshell::Shell;

use crate::build::submission::{SourceSpec, Submission};
use crate::container::toolchain::Toolchain;
use crate::flags::List;

impl List {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        let subs = Submission::ids()?.iter().map(|id| Submission::load(id)).collect::<Result<Vec<_>>>()?;
        let tcs = Toolchain::names()?.iter().map(|n| Toolchain::load(n)).collect::<Result<Vec<_>>>()?;
        if crate::ui::json() {
            #[derive(serde::Serialize)]
            struct Listing<'a> {
                submissions: &'a [Submission],
                toolchains: &'a [Toolchain],
            }
            crate::ui::emit(&Listing { submissions: &subs, toolchains: &tcs })?;
            return Ok(());
        }
        crate::say!("Submissions:");
        for s in &subs {
            let source = match &s.source {
                SourceSpec::Crate { name, version, .. } => format!("crate {name} {version}"),
                SourceSpec::Archive { file, sha256, .. } => {
                    format!("archive {file} (sha256 {}…)", sha256.short())
                }
            };
            crate::say!("  {:<16} {} ({}) — {source}", s.id, s.name, s.family);
            let labels: Vec<&str> = s.instances.iter().map(|i| i.label.as_str()).collect();
            crate::say!("  {:<16} instances: {}", "", labels.join(", "));
        }
        crate::say!("Toolchains:");
        for t in &tcs {
            let pins: Vec<String> = t.pinned.iter().map(|(p, v)| format!("{p}={v}")).collect();
            crate::say!(
                "  {:<16} {:?} {} [{}] — {}",
                t.name,
                t.distro,
                t.suite,
                t.architectures.iter().map(|a| a.debian()).collect::<Vec<_>>().join(", "),
                pins.join(" ")
            );
        }
        Ok(())
    }
}
