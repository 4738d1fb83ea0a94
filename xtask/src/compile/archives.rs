//! A folder of archives (`campaign --archives DIR`): each pinned archive is found by its
//! SHA-256, whatever its file name; what is not there is listed with what to fetch.

use std::collections::BTreeMap;

use anyhow::{Context, Result};
use camino::{Utf8Path, Utf8PathBuf};

use crate::compile::iccs;
use crate::compile::options::Given;
use crate::compile::submission::{SourceSpec, Submission};
use crate::project;

/// The regular files directly in a folder, by SHA-256 (links and subfolders are not
/// followed: the folder is the operator's, its files are still only bytes).
pub struct Folder {
    pub dir: Utf8PathBuf,
    by_sha: BTreeMap<String, Utf8PathBuf>,
}

/// What a campaign over a folder runs, and what it lacks.
pub struct Matched {
    /// `--archive ID=PATH` for every candidate found (and the ICCS API package).
    pub given: Vec<Given>,
    pub found: Vec<String>,
    /// One line per candidate whose archive is not there: file, size, SHA-256, page.
    pub missing: Vec<String>,
}

impl Folder {
    pub fn scan(dir: &Utf8Path) -> Result<Folder> {
        let entries = dir.read_dir_utf8().with_context(|| format!("--archives {dir}: cannot read the folder"))?;
        let mut by_sha = BTreeMap::new();
        for e in entries {
            let e = e?;
            if !e.file_type()?.is_file() {
                continue;
            }
            crate::ui::doing(format!("digesting {}", e.file_name()));
            by_sha.insert(project::sha256_regular(e.path())?, e.path().to_owned());
        }
        Ok(Folder { dir: dir.to_owned(), by_sha })
    }

    fn find(&self, sha: &str) -> Option<&Utf8PathBuf> {
        self.by_sha.get(sha)
    }

    /// Match `subs` (manifests with a pinned archive) against the folder.
    pub fn matched(&self, subs: &[Submission]) -> Result<Matched> {
        let mut m = Matched { given: vec![], found: vec![], missing: vec![] };
        let pin = iccs::Pin::load()?;
        let api = self.find(pin.sha256.as_str());
        for sub in subs {
            let SourceSpec::Archive { file, bytes, sha256, page, .. } = &sub.source else { continue };
            let page = page.as_ref().map(|p| format!(", {p}")).unwrap_or_default();
            match self.find(sha256.as_str()) {
                None => m.missing.push(format!("{}: {file}, {bytes} bytes, SHA-256 {sha256}{page}", sub.id)),
                Some(_) if sub.takes_iccs() && api.is_none() => m.missing.push(format!(
                    "{}: its archive is here, but it takes files of the ICCS API package {}, {} bytes, SHA-256 {}",
                    sub.id, pin.file, pin.bytes, pin.sha256
                )),
                Some(path) => {
                    m.given.push(Given { id: Some(sub.id.clone()), path: path.clone() });
                    m.found.push(sub.id.clone());
                }
            }
        }
        if let Some(path) = api {
            m.given.push(Given { id: Some(iccs::ID.into()), path: path.clone() });
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only regular files are read: a link (to a secret, say) or a FIFO (which would block
    /// a reader forever) in the folder is passed over, never followed or opened.
    #[test]
    fn links_and_fifos_in_the_folder_are_passed_over() {
        let t = tempfile::tempdir().unwrap();
        let dir = Utf8Path::from_path(t.path()).unwrap();
        std::fs::write(dir.join("any name.bin"), b"archive bytes").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link.zip")).unwrap();
        let fifo = dir.join("fifo.zip");
        assert!(std::process::Command::new("mkfifo").arg(fifo.as_str()).status().unwrap().success());
        std::fs::create_dir(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/inner.zip"), b"inner").unwrap();
        let folder = Folder::scan(dir).unwrap();
        assert_eq!(folder.by_sha.len(), 1, "{:?}", folder.by_sha);
        let sha = project::sha256_hex(b"archive bytes");
        assert_eq!(folder.find(&sha), Some(&dir.join("any name.bin")));
        assert!(folder.find(&project::sha256_hex(b"inner")).is_none());
    }
}
