//! `cargo xtask merge`: campaign shards → one evidence set with a fresh index.
//! Each shard must pass its own index check; a path present in two shards with
//! different contents is a conflict and nothing is merged.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use camino::Utf8PathBuf;
use xshell::Shell;

use crate::evidence;
use crate::flags::Merge;
use crate::project;

impl Merge {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        if self.out.exists() && self.out.read_dir_utf8()?.next().is_some() {
            bail!("{} is not empty: merge into a new folder", self.out);
        }
        // path → (digest, shard it came from)
        let mut plan: BTreeMap<String, (String, Utf8PathBuf)> = BTreeMap::new();
        let mut conflicts = Vec::new();
        for shard in &self.shards {
            let problems = evidence::check(shard).with_context(|| format!("shard {shard}"))?;
            if !problems.is_clean() {
                bail!(
                    "shard {shard} does not match its own index (changed {:?}, missing {:?}, extra {:?}{}); \
                     run `cargo xtask evidence check {shard}`",
                    problems.changed,
                    problems.missing,
                    problems.extra,
                    problems.index.iter().chain(&problems.refused).map(|i| format!(", {i}")).collect::<String>()
                );
            }
            for (path, sha) in evidence::read_index(shard)? {
                match plan.get(&path) {
                    Some((other, from)) if *other != sha => {
                        conflicts.push(format!("{path}: {from} has {other}, {shard} has {sha}"));
                    }
                    Some(_) => {}
                    None => {
                        plan.insert(path, (sha, shard.clone()));
                    }
                }
            }
        }
        if !conflicts.is_empty() {
            bail!("conflicting duplicates, nothing merged:\n  {}", conflicts.join("\n  "));
        }
        for (path, (sha, shard)) in &plan {
            let dest = self.out.join(path);
            std::fs::create_dir_all(dest.parent().unwrap_or(&self.out))?;
            let mut from = project::open_regular(&shard.join(path))?;
            let mut to = std::fs::File::create(&dest).with_context(|| format!("cannot create {dest}"))?;
            std::io::copy(&mut from, &mut to).with_context(|| format!("cannot copy {shard}/{path}"))?;
            if &project::sha256_regular(&dest)? != sha {
                bail!("{shard}/{path} changed while merging");
            }
        }
        let digest = evidence::write_index(&self.out)?;
        println!("merged {} shards: {} files into {}; index sha256 {digest}", self.shards.len(), plan.len(), self.out);
        Ok(())
    }
}
