//! System profiles (`systems/<name>.toml`): which toolchain, architecture, CPU and
//! trial target a system is measured with, and the host state it is expected to have.

use anyhow::{bail, Result};
use camino::Utf8PathBuf;
use serde::{Deserialize, Serialize};

use crate::flags::Arch;
use crate::project;

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SystemProfile {
    pub name: String,
    pub description: String,
    pub toolchain: String,
    /// None: the host's architecture.
    #[serde(default)]
    pub arch: Option<Arch>,
    #[serde(default)]
    pub cpu: Option<usize>,
    /// The submissions verify, bench and campaign take when given none.
    pub campaign: Vec<String>,
    pub trial_target_s: f64,
    pub expected_host: String,
}

impl SystemProfile {
    pub fn dir() -> Utf8PathBuf {
        project::root().join("systems")
    }

    pub fn load(name: &str) -> Result<SystemProfile> {
        if let Err(why) = project::plain_name(name) {
            bail!("system name {name:?} {why}");
        }
        let path = Self::dir().join(format!("{name}.toml"));
        if !path.is_file() {
            bail!("unknown system `{name}`: no {path} (known: {})", project::toml_stems(&Self::dir())?.join(", "));
        }
        let p: SystemProfile = project::read_toml(&path)?;
        if p.name != name {
            bail!("{path}: name = {:?} does not match the file name", p.name);
        }
        Ok(p)
    }

    /// The architecture to use: the command line's, else the profile's, else the host's.
    pub fn arch(&self, given: Option<Arch>) -> Arch {
        given.or(self.arch).unwrap_or_else(Arch::host)
    }

    /// The ids given, else the profile's campaign set.
    pub fn ids(&self, given: &[String]) -> Vec<String> {
        if given.is_empty() {
            self.campaign.clone()
        } else {
            given.to_vec()
        }
    }

    pub fn toolchain(&self, given: &Option<String>) -> String {
        given.clone().unwrap_or_else(|| self.toolchain.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seed_systems_and_local_are_defined() {
        let x = SystemProfile::load("x86_1").unwrap();
        assert_eq!((x.toolchain.as_str(), x.arch, x.trial_target_s), ("debian-13", Some(Arch::X86_64), 1.0));
        let a = SystemProfile::load("arm_1").unwrap();
        assert_eq!(
            (a.toolchain.as_str(), a.arch, a.cpu, a.trial_target_s),
            ("ubuntu-26.04", Some(Arch::Aarch64), Some(2), 0.5)
        );
        let l = SystemProfile::load("local").unwrap();
        assert_eq!(l.arch(None), Arch::host());
        assert_eq!(l.arch(Some(Arch::Aarch64)), Arch::Aarch64);
        for name in project::toml_stems(&SystemProfile::dir()).unwrap() {
            SystemProfile::load(&name).unwrap();
        }
        assert!(SystemProfile::load("nope").unwrap_err().to_string().contains("x86_1"));
    }
}
