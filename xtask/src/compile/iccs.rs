//! The ICCS API package: the official `drng.c`/`auxfunc.c` that a manifest takes with
//! `[build] iccs` where a tree lacks them or ships edited copies. A pinned archive the
//! user brings, copied into the cache, checked by SHA-256 and extracted like a
//! submission's (`compile::trees`).

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::Deserialize;

use crate::compile::extract::ExtractLimits;
use crate::compile::trees;
use crate::evidence::domain::PatchRecord;
use crate::project;
use crate::sha::Sha256Hex;

/// The id `--archive` takes for the package (`--archive iccs-api=PATH`).
pub const ID: &str = "iccs-api";

/// How to supply it, for messages.
pub const SUPPLY: &str = "put API_PKC.zip (the ICCS API package) at archives/API_PKC.zip, or pass \
     --archive iccs-api=PATH (campaign: in the --archives folder)";

/// `sources/iccs-api.toml`: the package's pin.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pin {
    pub file: String,
    pub bytes: u64,
    pub sha256: Sha256Hex,
}

impl Pin {
    /// The project's pin; `NGCC_REPRO_ICCS_API` names another pin file (tests, a
    /// corrected package): a pin still, checked the same way.
    pub fn load() -> Result<Pin> {
        let path = std::env::var("NGCC_REPRO_ICCS_API")
            .map_or_else(|_| project::root().join("sources/iccs-api.toml"), Utf8PathBuf::from);
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        toml::from_str(&text).with_context(|| format!("invalid pin {path}"))
    }

    /// Where it is looked for when not given.
    pub fn default_path(&self) -> Utf8PathBuf {
        project::root().join("archives").join(&self.file)
    }

    /// One line for a missing-archives list.
    pub fn missing(&self, given: Option<&Utf8Path>) -> Option<String> {
        let path = given.map_or_else(|| self.default_path(), Utf8Path::to_owned);
        (!path.is_file()).then(|| {
            format!(
                "the ICCS API package {} ({} bytes, SHA-256 {}); it was not found at {path}",
                self.file, self.bytes, self.sha256
            )
        })
    }
}

/// The official files of a checked package, on the host.
#[derive(Debug, Clone)]
pub struct IccsApi {
    /// The folder holding `drng.c` and `auxfunc.c` in the extracted package.
    pub dir: Utf8PathBuf,
    /// What every record lists: one entry per official file a build may take.
    pub records: Vec<PatchRecord>,
}

impl IccsApi {
    /// Check the package against its pin and find its one folder with both files.
    pub fn obtain(given: Option<&Utf8Path>, limits: ExtractLimits) -> Result<IccsApi> {
        let pin = Pin::load()?;
        let path = given.map_or_else(|| pin.default_path(), Utf8Path::to_owned);
        if let Some(why) = pin.missing(Some(&path)) {
            return crate::ui::usage(format!("{why}.\nTo build with the official ICCS files, {SUPPLY}."));
        }
        let refuse = |c: &trees::Copied| {
            anyhow!("refusing {path}: SHA-256 {}, but the ICCS API package is pinned as {}", c.sha256, pin.sha256)
        };
        let tree = trees::Cache::sources().pinned(&path, &pin.sha256, limits, refuse)?;
        let dir = files_dir(&tree).with_context(|| format!("{}: the ICCS API package", pin.file))?;
        let mut records = Vec::new();
        for f in crate::compile::submission::ICCS_FILES {
            records.push(PatchRecord {
                file: format!("{}:{f}", pin.file),
                sha256: Sha256Hex::computed(project::sha256_regular(&dir.join(f))?),
                reason: format!("official ICCS {f} from {} (sha256 {})", pin.file, pin.sha256.short()),
                arches: vec![],
            });
        }
        Ok(IccsApi { dir, records })
    }

    /// The official files a build got (name → SHA-256 of its copy) are the ones its
    /// records name: a cached package edited since it was checked is no official file.
    pub fn check_copies(&self, copies: &BTreeMap<String, String>) -> Result<()> {
        for (f, record) in crate::compile::submission::ICCS_FILES.iter().zip(&self.records) {
            let copied = copies.get(*f).map_or("none", String::as_str);
            if copied != record.sha256.as_str() {
                bail!("{} changed since it was checked: {f} has SHA-256 {copied}, not {}", self.dir, record.sha256);
            }
        }
        Ok(())
    }

    /// The files a build's inputs get (every regular C file and header of the folder).
    pub fn files(&self) -> Result<Vec<String>> {
        let mut names = Vec::new();
        for e in self.dir.read_dir_utf8()? {
            let e = e?;
            let code = e.file_name().ends_with(".c") || e.file_name().ends_with(".h");
            if code && e.file_type()?.is_file() {
                names.push(e.file_name().to_owned());
            }
        }
        names.sort();
        Ok(names)
    }
}

/// The one folder of `tree` that holds regular files `drng.c` and `auxfunc.c`.
fn files_dir(tree: &Utf8Path) -> Result<Utf8PathBuf> {
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(tree).into_iter().filter_map(std::result::Result::ok) {
        let Some(path) = Utf8Path::from_path(entry.path()) else { continue };
        if entry.file_type().is_file() && path.file_name() == Some("drng.c") {
            let dir = path.parent().unwrap_or(tree).to_owned();
            if std::fs::symlink_metadata(dir.join("auxfunc.c")).is_ok_and(|m| m.is_file()) {
                found.push(dir);
            }
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => bail!("no folder holds both drng.c and auxfunc.c"),
        n => bail!("{n} folders hold drng.c and auxfunc.c: which is official is not clear"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A build's official files are those its records name: a copy of anything else (a
    /// cached package edited after it was checked) fails the build, naming the file.
    #[test]
    fn a_copy_that_is_not_the_recorded_file_is_refused() {
        let sha = |text: &str| project::sha256_hex(text.as_bytes());
        let record = |f: &str, text: &str| PatchRecord {
            file: format!("API_PKC.zip:{f}"),
            sha256: Sha256Hex::computed(sha(text)),
            reason: String::new(),
            arches: vec![],
        };
        let api = IccsApi { dir: "API".into(), records: vec![record("drng.c", "d"), record("auxfunc.c", "a")] };
        let copies = |drng: &str| {
            let mut c = BTreeMap::from([("auxfunc.c".to_owned(), sha("a")), ("drng.h".to_owned(), sha("h"))]);
            c.insert("drng.c".to_owned(), sha(drng));
            c
        };
        api.check_copies(&copies("d")).unwrap();
        let e = format!("{:#}", api.check_copies(&copies("forged")).unwrap_err());
        assert_eq!(
            e,
            format!("API changed since it was checked: drng.c has SHA-256 {}, not {}", sha("forged"), sha("d"))
        );
        let mut none = copies("d");
        none.remove("auxfunc.c");
        assert!(format!("{:#}", api.check_copies(&none).unwrap_err()).contains("auxfunc.c has SHA-256 none"));
    }
}
