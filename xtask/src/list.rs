//! `cargo xtask list`: submissions, instances and toolchains.

use anyhow::Result;
use xshell::Shell;

use crate::build::submission::{SourceSpec, Submission};
use crate::container::toolchain::Toolchain;
use crate::flags::List;

/// How many instances `kat.sha256` gives a digest for.
fn digests(s: &Submission) -> String {
    match crate::kat::Manifest::load(&s.kat_manifest_path()) {
        Ok(m) => {
            let all_files = |i: &crate::build::submission::Instance| {
                s.kat_files(i).is_ok_and(|f| f.iter().all(|(_, f)| m.entry(&i.label, f).is_some()))
            };
            let known = s.instances.iter().filter(|i| all_files(i)).count();
            format!("{known} of {} instances", s.instances.len())
        }
        Err(e) => format!("none ({e:#})"),
    }
}

fn verified(s: &Submission) -> String {
    match &s.verified {
        Some(how) => format!("verified on the real source: {how}"),
        None => "never verified on the real archive here (written from published facts)".into(),
    }
}

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
        let count = |f: crate::family::FamilyId| subs.iter().filter(|s| s.family == f).count();
        let families: Vec<String> = crate::family::FamilyId::ALL.iter().map(|f| format!("{} {f}", count(*f))).collect();
        crate::say!("Submissions ({}: {}):", subs.len(), families.join(", "));
        for s in &subs {
            let source = match &s.source {
                SourceSpec::Crate { name, version, .. } => format!("crate {name} {version} (pinned by the lock file)"),
                SourceSpec::Archive { file, bytes, sha256, .. } => {
                    format!("archive {file}, {bytes} bytes, pinned sha256 {}…", sha256.short())
                }
            };
            crate::say!("  {:<16} {} ({}) — {source}", s.id, s.name, s.family);
            let labels: Vec<&str> = s.instances.iter().map(|i| i.label.as_str()).collect();
            crate::say!("  {:<16} {} instances: {}", "", labels.len(), labels.join(", "));
            crate::say!("  {:<16} KAT digests: {}; {}", "", digests(s), verified(s));
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
