//! The CPU time of one container as the host reads it, from outside the candidate's
//! process: each container gets a fresh cgroup of the tool's (`--cgroup-parent`), whose
//! cumulative usage (cgroup v1 `cpuacct.usage`, v2 `cpu.stat` `usage_usec`) still holds
//! the container's after the container's own cgroup is gone. The engine's helpers that
//! land in it (podman's conmon, in `<parent>/conmon`) are subtracted. The sandboxed user
//! cannot write cgroupfs, so it cannot move out of it or reset it.

use anyhow::{bail, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::{Deserialize, Serialize};
use xshell::Shell;

use crate::container::engine::Engine;

const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// What the host read of a command's CPU time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostCpu {
    /// Nanoseconds of CPU (user + system) of every process of the container.
    Ns(u64),
    /// Why the host could not read it (rootless engine, no cgroup hierarchy, host backend).
    Unavailable(String),
}

impl HostCpu {
    pub fn ns(&self) -> Option<u64> {
        match self {
            HostCpu::Ns(n) => Some(*n),
            HostCpu::Unavailable(_) => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

/// A fresh cgroup made by the tool for one container, removed when dropped.
#[derive(Debug)]
pub struct TrialCgroup {
    /// The name, as `--cgroup-parent` takes it (`/<name>`).
    name: String,
    /// The cgroup in the hierarchy the tool reads.
    dir: Utf8PathBuf,
    version: Version,
    helpers: &'static [&'static str],
}

/// The hierarchy with CPU accounting: a pure v2 mount, v1 `cpuacct`, or a hybrid host's
/// `unified` v2 mount.
fn hierarchy(root: &Utf8Path) -> Option<(Utf8PathBuf, Version)> {
    if root.join("cgroup.controllers").exists() {
        return Some((root.to_owned(), Version::V2));
    }
    for v1 in ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"] {
        if root.join(v1).join("cpuacct.usage").exists() {
            return Some((root.join(v1), Version::V1));
        }
    }
    let unified = root.join("unified");
    unified.join("cgroup.controllers").exists().then_some((unified, Version::V2))
}

impl TrialCgroup {
    /// A fresh cgroup for the container `container`, or why there is none. A cgroup that
    /// exists already is an error: it is not the tool's.
    pub fn create(sh: &Shell, engine: Engine, container: &str) -> Result<std::result::Result<TrialCgroup, String>> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Ok(Err("rootless: the tool cannot create cgroups".into()));
        }
        if let Some(why) = engine.cgroup_parent_unsupported(sh) {
            return Ok(Err(why));
        }
        let Some((root, version)) = hierarchy(Utf8Path::new(CGROUP_ROOT)) else {
            return Ok(Err(format!("no cgroup hierarchy with CPU accounting under {CGROUP_ROOT}")));
        };
        let dir = root.join(container);
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => bail!("cgroup {dir} exists already"),
            Err(e) => return Ok(Err(format!("cannot create cgroup {dir}: {e}"))),
        }
        Ok(Ok(TrialCgroup { name: format!("/{container}"), dir, version, helpers: engine.cgroup_helpers() }))
    }

    pub fn parent(&self) -> &str {
        &self.name
    }

    /// The container's CPU time; call once the container is removed.
    pub fn read(&self) -> HostCpu {
        let total = match usage_ns(&self.dir, self.version) {
            Ok(n) => n,
            Err(e) => return HostCpu::Unavailable(format!("{e:#}")),
        };
        let helpers: u64 = self
            .helpers
            .iter()
            .map(|h| self.dir.join(h))
            .filter(|d| d.is_dir())
            .map(|d| usage_ns(&d, self.version).unwrap_or(0))
            .sum();
        HostCpu::Ns(total.saturating_sub(helpers))
    }
}

/// Cumulative CPU usage of a cgroup, its children (living or gone) included.
fn usage_ns(dir: &Utf8Path, version: Version) -> Result<u64> {
    let (file, scale) = match version {
        Version::V1 => ("cpuacct.usage", 1),
        Version::V2 => ("cpu.stat", 1000),
    };
    let path = dir.join(file);
    let text = std::fs::read_to_string(&path).map_err(|e| anyhow::anyhow!("cannot read {path}: {e}"))?;
    let value = match version {
        Version::V1 => Some(text.trim()),
        Version::V2 => text.lines().find_map(|l| l.strip_prefix("usage_usec ")),
    };
    match value.and_then(|v| v.trim().parse::<u64>().ok()) {
        Some(v) => Ok(v.saturating_mul(scale)),
        None => bail!("unexpected contents of {path}"),
    }
}

impl Drop for TrialCgroup {
    /// Remove the cgroup from every hierarchy the engine created it in: children first
    /// (podman leaves `conmon`), a few tries while the last process is still exiting.
    fn drop(&mut self) {
        let name = self.name.trim_start_matches('/');
        let mut dirs = vec![Utf8PathBuf::from(CGROUP_ROOT).join(name)];
        if let Ok(entries) = std::fs::read_dir(CGROUP_ROOT) {
            for e in entries.flatten() {
                if let Some(p) = Utf8PathBuf::from_path_buf(e.path()).ok().filter(|p| p.join(name).is_dir()) {
                    dirs.push(p.join(name));
                }
            }
        }
        for dir in dirs.iter().filter(|d| d.is_dir()) {
            if let Err(e) = remove_cgroup(dir) {
                crate::warning!("warning: could not remove cgroup {dir}: {e}");
            }
        }
    }
}

fn remove_cgroup(dir: &Utf8Path) -> std::io::Result<()> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir() && !t.is_symlink()) {
                if let Ok(child) = Utf8PathBuf::from_path_buf(e.path()) {
                    remove_cgroup(&child)?;
                }
            }
        }
    }
    let mut tries = 0;
    loop {
        match std::fs::remove_dir(dir) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 20 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_is_read_from_either_version() {
        let t = tempfile::tempdir().unwrap();
        let d = Utf8Path::from_path(t.path()).unwrap();
        std::fs::write(d.join("cpuacct.usage"), "5126617618\n").unwrap();
        std::fs::write(d.join("cpu.stat"), "usage_usec 4981144\nuser_usec 4957438\n").unwrap();
        assert_eq!(usage_ns(d, Version::V1).unwrap(), 5_126_617_618);
        assert_eq!(usage_ns(d, Version::V2).unwrap(), 4_981_144_000);
        std::fs::write(d.join("cpu.stat"), "user_usec 1\n").unwrap();
        assert!(usage_ns(d, Version::V2).is_err());
        // The engine's helper (conmon) is not the container.
        std::fs::create_dir(d.join("conmon")).unwrap();
        std::fs::write(d.join("conmon/cpuacct.usage"), "146041555\n").unwrap();
        let cg = TrialCgroup { name: "/none".into(), dir: d.to_owned(), version: Version::V1, helpers: &["conmon"] };
        assert_eq!(cg.read(), HostCpu::Ns(5_126_617_618 - 146_041_555));
        std::mem::forget(cg);
    }
}
