//! `cargo xtask doctor`: every prerequisite of the container path for this system
//! profile, checked, with the one command that fixes each missing item here.

use anyhow::{bail, Result};
use camino::Utf8Path;
use xshell::Shell;

use crate::container::engine::{which, Engine};
use crate::container::toolchain::{Distro, Toolchain};
use crate::flags::{Arch, Doctor, EngineChoice};
use crate::measure::systems::SystemProfile;
use crate::{container::sandbox, project};

/// One checked prerequisite.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub what: &'static str,
    pub ok: bool,
    /// Missing required items fail the doctor; the rest only lose a feature.
    pub required: bool,
    pub detail: String,
    pub fix: Option<String>,
}

/// How to install packages on this machine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Installer {
    Apt { root: bool },
    Unknown,
}

impl Installer {
    pub fn detect() -> Installer {
        let os = std::fs::read_to_string("/etc/os-release").unwrap_or_default();
        let debian_like = os.lines().any(|l| {
            (l.starts_with("ID=") || l.starts_with("ID_LIKE=")) && (l.contains("debian") || l.contains("ubuntu"))
        });
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if debian_like {
            Installer::Apt { root }
        } else {
            Installer::Unknown
        }
    }

    pub fn install(self, packages: &str) -> String {
        match self {
            Installer::Apt { root: true } => format!("apt-get install --no-install-recommends {packages}"),
            Installer::Apt { root: false } => format!("sudo apt-get install --no-install-recommends {packages}"),
            Installer::Unknown => {
                format!("install the Debian/Ubuntu package(s) {packages} or your distribution's equivalent")
            }
        }
    }
}

/// What the checks look at.
struct Facts<'a> {
    sh: &'a Shell,
    engine: Option<Engine>,
    arch: Arch,
    toolchain: Toolchain,
    installer: Installer,
}

impl Doctor {
    pub fn run(self, sh: &Shell) -> Result<()> {
        let profile = SystemProfile::load(&self.on.system)?;
        let facts = Facts {
            sh,
            engine: match self.on.target.engine {
                EngineChoice::Host => None,
                EngineChoice::Docker => Some(Engine::Docker),
                EngineChoice::Podman | EngineChoice::Auto => Some(Engine::Podman),
            },
            arch: profile.arch(self.on.target.arch),
            toolchain: Toolchain::load(&profile.toolchain(&self.on.toolchain))?,
            installer: Installer::detect(),
        };
        let findings = facts.all();
        for f in &findings {
            let mark = match (f.ok, f.required) {
                (true, _) => "ok  ",
                (false, true) => "MISS",
                (false, false) => "warn",
            };
            crate::say!("{mark} {:<22} {}", f.what, f.detail);
            if let (false, Some(fix)) = (f.ok, &f.fix) {
                crate::say!("     {:<22} fix: {fix}", "");
            }
        }
        let missing = findings.iter().filter(|f| f.required && !f.ok).count();
        if missing > 0 {
            bail!(
                "{missing} prerequisite(s) missing for {} on {}; run the fixes above",
                facts.toolchain.name,
                self.on.system
            );
        }
        crate::say!("ready: {} images for {} can be built and used", facts.toolchain.name, facts.arch.uname());
        Ok(())
    }
}

impl Facts<'_> {
    fn all(&self) -> Vec<Finding> {
        let mut v = Vec::new();
        if let Some(engine) = self.engine {
            v.extend(engine_checks(self.sh, self.installer, engine));
            v.push(self.program("mmdebstrap", "mmdebstrap", true, "builds the toolchain root filesystem"));
            v.push(self.keyring());
            if self.arch != Arch::host() {
                v.extend(self.foreign());
            }
            v.push(self.memory_controller());
            v.push(self.disk());
        }
        v.push(self.program("patch", "patch", true, "applies submissions' patches"));
        v.push(self.perf());
        v
    }

    fn program(&self, program: &'static str, package: &str, required: bool, why: &str) -> Finding {
        program_finding(self.installer, program, package, required, why)
    }

    fn keyring(&self) -> Finding {
        let (path, package) = match self.toolchain.distro {
            Distro::Debian => ("/usr/share/keyrings/debian-archive-keyring.gpg", "debian-archive-keyring"),
            Distro::Ubuntu => ("/usr/share/keyrings/ubuntu-archive-keyring.gpg", "ubuntu-keyring"),
        };
        let ok = Utf8Path::new(path).exists();
        let detail = format!("{path} (signs the {} archive)", self.toolchain.suite);
        finding("archive keyring", ok, true, detail, self.installer.install(package))
    }

    fn foreign(&self) -> Vec<Finding> {
        let name = format!("qemu-{}", self.arch.uname());
        let qemu = format!("/usr/bin/{name}-static");
        let binfmt = std::fs::read_to_string(format!("/proc/sys/fs/binfmt_misc/{name}")).unwrap_or_default();
        let registered = binfmt.lines().next() == Some("enabled");
        vec![
            self.program("arch-test", "arch-test", true, "mmdebstrap refuses a foreign architecture without it"),
            finding(
                "qemu-user",
                Utf8Path::new(&qemu).exists(),
                true,
                format!("{qemu} runs {} code here", self.arch.uname()),
                self.installer.install("qemu-user-static"),
            ),
            finding(
                "binfmt",
                registered,
                true,
                format!("/proc/sys/fs/binfmt_misc/{name} {}", if registered { "enabled" } else { "not registered" }),
                format!(
                    "cargo xtask image build {} --arch {} (registers it when run as root)",
                    self.toolchain.name,
                    self.arch.uname()
                ),
            ),
        ]
    }

    fn memory_controller(&self) -> Finding {
        let v2 = std::fs::read_to_string("/sys/fs/cgroup/cgroup.controllers").unwrap_or_default();
        let ok = v2.split_whitespace().any(|c| c == "memory") || Utf8Path::new("/sys/fs/cgroup/memory").is_dir();
        let detail = "cgroup memory controller (bounds every sandbox's memory)".to_owned();
        finding("memory cgroup", ok, true, detail, "boot the kernel with cgroup_enable=memory".into())
    }

    fn disk(&self) -> Finding {
        let cache = project::cache_dir();
        let probe = cache.ancestors().find(|p| p.exists()).unwrap_or(Utf8Path::new("/"));
        let free = project::free_bytes(probe).unwrap_or(0);
        let need: u64 = 4 << 30;
        let detail = format!("{} GiB free at {probe} (images and builds need about 4)", free >> 30);
        finding("disk", free >= need, true, detail, "free space there, or set NGCC_CACHE to a larger disk".into())
    }

    fn perf(&self) -> Finding {
        let p = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        let ok = p.is_some_and(|p| p <= 2);
        let detail =
            format!("perf_event_paranoid = {} (bench reads cycles at <= 2)", p.map_or("?".into(), |p| p.to_string()));
        finding("perf events", ok, false, detail, "sysctl -w kernel.perf_event_paranoid=2".into())
    }
}

fn finding(what: &'static str, ok: bool, required: bool, detail: String, fix: String) -> Finding {
    Finding { what, ok, required, detail, fix: (!ok).then_some(fix) }
}

fn program_finding(installer: Installer, program: &'static str, package: &str, required: bool, why: &str) -> Finding {
    let ok = which(program);
    let detail = if ok { format!("{program} found ({why})") } else { format!("{program} not found: {why}") };
    finding(program, ok, required, detail, installer.install(package))
}

/// The engine answers, with its runtime, the sandbox's init and seccomp profile, and
/// what a user other than root needs.
fn engine_checks(sh: &Shell, installer: Installer, engine: Engine) -> Vec<Finding> {
    let program = engine.program();
    if !which(program) {
        let detail = format!("{program} not found");
        return vec![finding("engine", false, true, detail, installer.install(engine.packages()))];
    }
    let mut v = Vec::new();
    let info = engine.call(sh, &["info".into()]);
    let start = engine.start_command().unwrap_or_else(|| installer.install(engine.packages()));
    let detail = match &info {
        Ok(_) => format!("`{program} info` answers"),
        Err(e) => format!("`{program} info` fails: {}", first_line(&format!("{e:#}"))),
    };
    v.push(finding("engine", info.is_ok(), true, detail, start));
    if let Some(runtime) = engine.runtime() {
        v.push(program_finding(installer, runtime, runtime, true, "the OCI runtime (crun fails on hybrid cgroups)"));
    }
    let (init, init_package) = engine.init();
    let has_init = init.exists() || init.file_name().is_some_and(which);
    let detail = format!("{init}: the init of every sandbox (`run --init`) so no child outlives its command");
    v.push(finding("sandbox init", has_init, true, detail, installer.install(init_package)));
    let (seccomp, package) = engine.seccomp_default();
    let detail = format!("{seccomp}: the seccomp profile every sandbox's own is derived from");
    v.push(finding("seccomp profile", seccomp.is_file(), true, detail, installer.install(package)));
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid != 0 && engine.rootless_maps_ids() {
        let detail = format!("rootless {program} (uid {uid}) needs newuidmap and /etc/subuid");
        v.push(finding("rootless", which("newuidmap"), true, detail, installer.install("uidmap")));
    } else {
        let detail = format!("running as uid {uid}; sandboxes run as uid {}", sandbox::SANDBOX_UID);
        v.push(finding("user", true, false, detail, String::new()));
    }
    v
}

/// Every required item missing for each engine, with its fix, as `doctor` says it:
/// why `--engine auto` found none.
pub fn missing_engines(sh: &Shell) -> String {
    let installer = Installer::detect();
    let mut lines = Vec::new();
    for engine in Engine::ALL {
        for f in engine_checks(sh, installer, engine).into_iter().filter(|f| f.required && !f.ok) {
            lines.push(format!("  {:<6} MISS {:<16} {}", engine.program(), f.what, f.detail));
            lines.extend(f.fix.map(|fix| format!("  {:<6}      {:<16} fix: {fix}", "", "")));
        }
    }
    lines.join("\n")
}

fn first_line(s: &str) -> &str {
    s.lines().find(|l| !l.trim().is_empty()).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixes_are_install_commands_for_this_distribution() {
        assert_eq!(
            Installer::Apt { root: true }.install("arch-test"),
            "apt-get install --no-install-recommends arch-test"
        );
        assert!(Installer::Apt { root: false }.install("x").starts_with("sudo apt-get"));
        assert!(Installer::Unknown.install("x").contains("equivalent"));
    }
}
