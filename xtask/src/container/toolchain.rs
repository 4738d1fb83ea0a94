//! Toolchain specs (the intent) and image locks (what a build resolved to).

use std::collections::BTreeMap;

use anyhow::{bail, Result};
use camino::Utf8PathBuf;
use serde::{Deserialize, Serialize};

use crate::container::engine::Engine;
use crate::evidence::domain::Arch;
use crate::evidence::schema::ImageLock;
use crate::project;

/// Bumped when the way an image is made from a spec changes.
const IMAGE_RECIPE: &str = "mmdebstrap-apt-v1";
/// Bumped when the way an analysis image is made from its toolchain image changes.
const ANALYSIS_RECIPE: &str = "apt-install-v1";

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    pub name: String,
    pub distro: Distro,
    pub suite: String,
    /// Debian's names (amd64, arm64) or the kernel's (`x86_64`, aarch64).
    pub architectures: Vec<Arch>,
    /// package → exact version.
    pub pinned: BTreeMap<String, String>,
    #[serde(default)]
    pub unpinned: Unpinned,
    pub expect: Expect,
    /// package → exact version, added to the toolchain image for `ct` (its analysis
    /// image, `toolchains/analysis/<name>.toml`); kept out of this spec so that the
    /// toolchain image does not change with them.
    #[serde(skip)]
    pub analysis: BTreeMap<String, String>,
    #[serde(skip)]
    pub spec_sha256: String,
}

/// `toolchains/analysis/<name>.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct AnalysisSpec {
    pinned: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Distro {
    Debian,
    Ubuntu,
}

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Unpinned {
    pub packages: Vec<String>,
}

/// First lines of `gcc --version` and `cmake --version`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub gcc: String,
    pub cmake: String,
}

impl Toolchain {
    pub fn dir() -> Utf8PathBuf {
        project::root().join("toolchains")
    }

    pub fn load(name: &str) -> Result<Toolchain> {
        let path = Self::dir().join(format!("{name}.toml"));
        if crate::project::plain_name(name).is_err() || !path.is_file() {
            let known = Self::names()?;
            return crate::ui::usage(format!(
                "unknown toolchain `{name}`: no {path}{} (known: {})",
                crate::project::suggest(name, known.iter().map(String::as_str)),
                known.join(", ")
            ));
        }
        let mut tc: Toolchain = project::read_toml(&path)?;
        if tc.name != name {
            bail!("{path}: name = {:?} does not match the file name", tc.name);
        }
        tc.spec_sha256 = project::sha256_file(&path)?;
        let analysis = Self::dir().join("analysis").join(format!("{name}.toml"));
        if analysis.is_file() {
            tc.analysis = project::read_toml::<AnalysisSpec>(&analysis)?.pinned;
        }
        Ok(tc)
    }

    pub fn names() -> Result<Vec<String>> {
        project::toml_stems(&Self::dir())
    }

    pub fn supports(&self, arch: Arch) -> Result<()> {
        if !self.architectures.contains(&arch) {
            bail!(
                "toolchain {} is not defined for {} (architectures: {:?})",
                self.name,
                arch.debian(),
                self.architectures
            );
        }
        Ok(())
    }

    /// Image tag: a content hash of the spec, so a changed spec gets a new image.
    pub fn tag(&self, arch: Arch) -> String {
        let key = project::sha256_hex(format!("{IMAGE_RECIPE}\n{}\n{}", self.spec_sha256, arch.debian()).as_bytes());
        format!("localhost/ngcc-repro/{}:{}-{}", self.name, arch.debian(), &key[..16])
    }

    /// The analysis image's tag: the toolchain image it is made from and its own pins.
    pub fn analysis_tag(&self, arch: Arch, base_image_id: &str) -> String {
        let pins: Vec<String> = self.analysis.iter().map(|(p, v)| format!("{p}={v}")).collect();
        let key = format!("{ANALYSIS_RECIPE}\n{}\n{base_image_id}\n{}", self.tag(arch), pins.join(" "));
        let key = project::sha256_hex(key.as_bytes());
        format!("localhost/ngcc-repro/{}-analysis:{}-{}", self.name, arch.debian(), &key[..16])
    }

    /// Every analysis pin the installed packages do not match.
    pub fn analysis_violations(&self, installed: &BTreeMap<String, String>) -> Vec<String> {
        violations(&self.analysis, installed)
    }

    /// `--include` list for mmdebstrap: pinned packages with `=version`.
    pub fn include_list(&self) -> Vec<String> {
        self.pinned.iter().map(|(p, v)| format!("{p}={v}")).chain(self.unpinned.packages.iter().cloned()).collect()
    }

    /// Every pinned package whose installed version differs (or is missing).
    pub fn pin_violations(&self, installed: &BTreeMap<String, String>) -> Vec<String> {
        violations(&self.pinned, installed)
    }
}

fn violations(pins: &BTreeMap<String, String>, installed: &BTreeMap<String, String>) -> Vec<String> {
    pins.iter()
        .filter_map(|(p, want)| match installed.get(p) {
            Some(have) if have == want => None,
            Some(have) => Some(format!("{p}: pinned {want}, image has {have}")),
            None => Some(format!("{p}: pinned {want}, not installed")),
        })
        .collect()
}

impl ImageLock {
    /// One lock per engine: the same root filesystem has another image ID in each.
    pub fn path(engine: Engine, tag: &str) -> Utf8PathBuf {
        let file = tag.rsplit('/').next().unwrap_or(tag).replace(':', "-");
        project::cache_dir().join("images").join(format!("{file}.{}.lock.json", engine.program()))
    }

    pub fn load(engine: Engine, tag: &str) -> Option<ImageLock> {
        crate::evidence::schema::read(&Self::path(engine, tag)).ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_specs_parse_and_pin_the_seed_toolchains() {
        let debian = Toolchain::load("debian-13").unwrap();
        assert_eq!(debian.pinned.get("gcc-14").unwrap(), "14.2.0-19");
        assert_eq!(debian.pinned.get("cmake").unwrap(), "3.31.6-2");
        assert_eq!(debian.expect.gcc, "gcc (Debian 14.2.0-19) 14.2.0");
        let ubuntu = Toolchain::load("ubuntu-26.04").unwrap();
        assert_eq!(ubuntu.distro, Distro::Ubuntu);
        assert_eq!(ubuntu.expect.cmake, "cmake version 4.2.3");
        assert!(Toolchain::load("no-such").unwrap_err().to_string().contains("debian-13"));
    }

    #[test]
    fn tag_follows_spec_content_and_arch() {
        let mut tc = Toolchain::load("debian-13").unwrap();
        let a = tc.tag(Arch::X86_64);
        assert_eq!(a, tc.tag(Arch::X86_64));
        assert_ne!(a, tc.tag(Arch::Aarch64));
        tc.spec_sha256 = "changed".into();
        assert_ne!(a, tc.tag(Arch::X86_64));
    }

    #[test]
    fn pin_violations_name_the_package() {
        let tc = Toolchain::load("debian-13").unwrap();
        let mut installed = BTreeMap::new();
        installed.insert("gcc-14".to_owned(), "14.2.0-19".to_owned());
        installed.insert("cmake".to_owned(), "3.31.6-3".to_owned());
        let v = tc.pin_violations(&installed);
        assert_eq!(v, vec!["cmake: pinned 3.31.6-2, image has 3.31.6-3".to_owned()]);
    }
}
