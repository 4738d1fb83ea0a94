//! `cargo xtask evidence check|index`: the commands over an evidence set's index.

use anyhow::Result;
use xshell::Shell;

use crate::evidence::{check, read_index, write_index, INDEX};

/// `evidence index`: a fresh index of the evidence root.
#[derive(Debug, Clone)]
pub struct EvidenceIndex {
    pub dir: camino::Utf8PathBuf,
}

/// `evidence check`: the evidence root against its index.
#[derive(Debug, Clone)]
pub struct EvidenceCheck {
    pub dir: camino::Utf8PathBuf,
}

impl EvidenceCheck {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        let p = check(&self.dir)?;
        for (what, list) in [("changed", &p.changed), ("missing", &p.missing), ("extra", &p.extra)] {
            for f in list {
                crate::say!("{what:<8} {f}");
            }
        }
        if let Some(i) = &p.index {
            crate::say!("index    {i}");
        }
        for why in &p.schema {
            crate::say!("schema   {why}");
        }
        for why in &p.refused {
            crate::say!("refused  {why}");
        }
        if !p.is_clean() {
            let msg = format!(
                "evidence in {} does not match its index ({} changed, {} missing, {} extra{}{}{})",
                self.dir,
                p.changed.len(),
                p.missing.len(),
                p.extra.len(),
                if p.index.is_some() { ", index digest wrong" } else { "" },
                if p.refused.is_empty() {
                    String::new()
                } else {
                    format!(", {} links, special or oversize files", p.refused.len())
                },
                if p.schema.is_empty() {
                    String::new()
                } else {
                    format!(", {} not of this harness's schema", p.schema.len())
                }
            );
            return Err(crate::ui::Findings(msg).into());
        }
        let n = read_index(&self.dir)?.len();
        crate::say!("OK: {n} files match {}/{INDEX}", self.dir);
        Ok(())
    }
}

impl EvidenceIndex {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        let digest = write_index(&self.dir)?;
        crate::say!("{}/{INDEX}: {} files, sha256 {digest}", self.dir, read_index(&self.dir)?.len());
        Ok(())
    }
}
