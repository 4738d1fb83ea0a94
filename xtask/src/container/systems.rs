//! System profiles (`systems/<name>.toml`): which toolchain, architecture, CPU and
//! trial target a system is measured with, and the host state it is expected to have.

use anyhow::{bail, Result};
use camino::Utf8PathBuf;

use crate::evidence::domain::Arch;
use crate::project;

pub use crate::evidence::domain::SystemProfile;

/// Which system, toolchain and engine a command looks at.
#[derive(Debug, Clone)]
pub struct OnSystem {
    pub target: crate::container::engine::Target,
    pub toolchain: Option<String>,
    pub system: String,
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
            let known = project::toml_stems(&Self::dir())?;
            return crate::ui::usage(format!(
                "unknown system `{name}`: no {path}{} (known: {})",
                project::suggest(name, known.iter().map(String::as_str)),
                known.join(", ")
            ));
        }
        let p: SystemProfile = project::read_toml(&path)?;
        if p.name != name {
            bail!("{path}: name = {:?} does not match the file name", p.name);
        }
        // `<other>-<arch>` is the evidence folder of system <other> on <arch>.
        let base = [Arch::X86_64, Arch::Aarch64].iter().find_map(|a| name.strip_suffix(&format!("-{}", a.uname())));
        if let Some(other) = base.filter(|b| Self::dir().join(format!("{b}.toml")).is_file()) {
            bail!("{path}: the name is that of the evidence folder of system `{other}` on another architecture");
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

    /// The evidence folder of a run on this system with `arch`: the system's name, or
    /// `<name>-<arch>` when the run's architecture is not the profile's, so that the
    /// evidence of one architecture (an emulated one, say) never mixes with another's.
    pub fn evidence_name(&self, arch: Arch) -> String {
        if arch == self.arch(None) {
            self.name.clone()
        } else {
            format!("{}-{}", self.name, arch.uname())
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

    #[test]
    fn a_run_off_the_profiles_architecture_keeps_its_evidence_apart() {
        let l = SystemProfile::load("local").unwrap();
        let other = if Arch::host() == Arch::X86_64 { Arch::Aarch64 } else { Arch::X86_64 };
        assert_eq!(l.evidence_name(Arch::host()), "local");
        assert_eq!(l.evidence_name(other), format!("local-{}", other.uname()));
        let a = SystemProfile::load("arm_1").unwrap();
        assert_eq!(
            (a.evidence_name(Arch::Aarch64).as_str(), a.evidence_name(Arch::X86_64).as_str()),
            ("arm_1", "arm_1-x86_64")
        );
    }
}
