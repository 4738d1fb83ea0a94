//! `cargo xtask doctor`: every prerequisite of the container path for this system
//! profile, checked, with the one command that fixes each missing item here.

use anyhow::Result;
use camino::Utf8Path;
use xshell::Shell;

use crate::container::engine::{which, Engine};
use crate::container::systems::OnSystem;
use crate::container::systems::SystemProfile;
use crate::container::toolchain::{Distro, Toolchain};
use crate::evidence::domain::{Arch, EngineChoice};
use crate::measure::hostgate::{self, Gate};
use crate::{container::sandbox, project};

/// `doctor`: every prerequisite of the container path.
#[derive(Debug, Clone)]
pub struct Doctor {
    pub on: OnSystem,
}

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
    /// The CPU bench pins its trials to (the profile's; `bench --cpu N` another).
    cpu: Option<usize>,
    system: String,
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
            cpu: profile.cpu,
            system: self.on.system.clone(),
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
            // A finding of the doctor's (exit 1), as a check that did not hold.
            return Err(crate::ui::Findings(format!(
                "{missing} prerequisite(s) missing for {} on {}; run the fixes above",
                facts.toolchain.name, self.on.system
            ))
            .into());
        }
        crate::say!(
            "ready: {} images for {} can be built and used; {}",
            facts.toolchain.name,
            facts.arch.uname(),
            facts.timing_summary()
        );
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
        v.extend(timing(&self.gate(), &self.host_counter(), &self.system));
        v
    }

    /// Bench's host gate as `bench` would evaluate it here (the profile's CPU).
    fn gate(&self) -> Gate {
        hostgate::check(Utf8Path::new("/"), self.cpu, self.arch)
    }

    fn host_counter(&self) -> HostCounter {
        if self.arch != Arch::host() {
            return HostCounter { arch: self.arch, emulated: true, paranoid: None, probe: Ok(()) };
        }
        let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        HostCounter { arch: self.arch, emulated: false, paranoid, probe: probe_cycles() }
    }

    /// The last line's word on timing: what bench reads and whether it will time here.
    fn timing_summary(&self) -> String {
        let reads = self.host_counter().reads();
        if self.gate().failed().is_empty() {
            format!("bench reads {reads} and times on this host as it is (fixed)")
        } else {
            format!("bench reads {reads}, and times on this unfixed host only with --allow-unfixed-host")
        }
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
}

/// What bench's timing driver would get here from its counter rule
/// (`drivers/bench_core.h`: the hardware cycle counter through `perf_event_open`, user
/// space only, else the TSC or CNTVCT_EL0), tried on the host by the same call.
#[derive(Debug, Clone, PartialEq)]
pub struct HostCounter {
    pub arch: Arch,
    /// Timing a foreign architecture under qemu-user.
    pub emulated: bool,
    pub paranoid: Option<i32>,
    /// The host's `perf_event_open` of user-space cycles: its errno when refused.
    pub probe: Result<(), i32>,
}

impl HostCounter {
    /// The sandbox's user (uid 65534, no capabilities) gets cycles only where the host
    /// has the event and `perf_event_paranoid` is at most 2; the probe runs as the caller,
    /// who may be root, so both decide.
    fn cycles(&self) -> bool {
        !self.emulated && self.probe.is_ok() && self.paranoid.is_some_and(|p| p <= 2)
    }

    /// What bench reads, in the words of its records.
    pub fn reads(&self) -> &'static str {
        match (self.cycles(), self.arch) {
            (true, _) => "CPU cycles (perf_event_open)",
            (false, Arch::X86_64) => "the TSC (ticks at its measured frequency, not cycles)",
            (false, Arch::Aarch64) => "CNTVCT_EL0 (the generic timer's ticks, not cycles)",
        }
    }

    /// Why there are no cycles, or None when there are.
    fn why_not(&self) -> Option<(String, Option<String>)> {
        let paranoid = self.paranoid.map_or("unreadable".to_owned(), |p| p.to_string());
        let sysctl = "sysctl -w kernel.perf_event_paranoid=2".to_owned();
        Some(match self.probe {
            _ if self.cycles() => return None,
            _ if self.emulated => (
                format!(
                    "{} runs under qemu-user: its records are marked emulated, not measurements",
                    self.arch.uname()
                ),
                Some(format!("time on a native {} machine", self.arch.uname())),
            ),
            Ok(()) => (
                format!(
                    "perf_event_paranoid = {paranoid} keeps the sandbox's user from the cycle counter (needs <= 2)"
                ),
                Some(sysctl),
            ),
            Err(e) if e == libc::EACCES || e == libc::EPERM => (
                format!("perf_event_open: permission denied (errno {e}), perf_event_paranoid = {paranoid}"),
                Some(sysctl),
            ),
            Err(e) => (
                format!(
                    "perf_event_open: no user-space cycle event on this machine (errno {e}; a virtual machine \
                     without a virtual PMU, typically)"
                ),
                None,
            ),
        })
    }
}

/// `perf_event_open` of user-space CPU cycles for this thread, as the timing driver asks
/// for it, then read once: Ok when it counts, else the errno.
fn probe_cycles() -> Result<(), i32> {
    /// `struct perf_event_attr` up to `config1` (PERF_ATTR_SIZE_VER0, 64 bytes).
    #[repr(C)]
    #[derive(Default)]
    struct Attr {
        kind: u32,
        size: u32,
        config: u64,
        sample_period: u64,
        sample_type: u64,
        read_format: u64,
        flags: u64,
        wakeup_events: u32,
        bp_type: u32,
        config1: u64,
    }
    const PERF_TYPE_HARDWARE: u32 = 0;
    const PERF_COUNT_HW_CPU_CYCLES: u64 = 0;
    const EXCLUDE_KERNEL: u64 = 1 << 5;
    const EXCLUDE_HV: u64 = 1 << 6;
    let attr = Attr {
        kind: PERF_TYPE_HARDWARE,
        size: std::mem::size_of::<Attr>() as u32,
        config: PERF_COUNT_HW_CPU_CYCLES,
        flags: EXCLUDE_KERNEL | EXCLUDE_HV,
        ..Attr::default()
    };
    // SAFETY: a valid attribute struct of the size it declares; pid 0 (this thread), any CPU.
    let fd = unsafe { libc::syscall(libc::SYS_perf_event_open, &raw const attr, 0, -1, -1, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO));
    }
    let fd = fd as libc::c_int;
    let mut v = 0u64;
    // SAFETY: reading 8 bytes into a u64 from the descriptor just opened.
    let n = unsafe { libc::read(fd, (&raw mut v).cast(), 8) };
    let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO);
    // SAFETY: the descriptor is ours and closed once.
    unsafe { libc::close(fd) };
    if n == 8 {
        Ok(())
    } else {
        Err(if n < 0 { errno } else { libc::EIO })
    }
}

/// Doctor's two timing lines: what bench reads here, and whether its host gate lets it
/// time (the gate's own checks and words, `measure::hostgate`). Neither is required:
/// building and verifying need neither.
pub fn timing(gate: &Gate, counter: &HostCounter, system: &str) -> Vec<Finding> {
    let counter_finding = match counter.why_not() {
        None => finding(
            "counter",
            true,
            false,
            format!("bench reads {}: perf_event_open answers here", counter.reads()),
            String::new(),
        ),
        Some((why, fix)) => Finding {
            what: "counter",
            ok: false,
            required: false,
            detail: format!("bench reads {}: {why}; records and pages name the counter", counter.reads()),
            fix: Some(fix.unwrap_or_else(|| {
                "none here: a machine that exposes its cycle counter (bare metal, or a VM with a virtual PMU) gives \
                 cycles"
                    .into()
            })),
        },
    };
    let failed = gate.failed();
    let cpu = gate.cpu.map_or("cpu0 (not pinned)".to_owned(), |c| format!("cpu{c}"));
    let host = if failed.is_empty() {
        finding("timing host", true, false, format!("fixed: bench's host gate passes on {cpu}"), String::new())
    } else {
        let list: Vec<String> = failed.iter().map(|c| c.detail.clone()).collect();
        Finding {
            what: "timing host",
            ok: false,
            required: false,
            detail: format!(
                "not fixed: bench and campaign refuse to time here (exit 3) unless you pass --allow-unfixed-host; \
                 the gate's failed checks on {cpu}: {}",
                list.join("; ")
            ),
            fix: Some(format!(
                "to time anyway, add --allow-unfixed-host (every record then carries the failed checks and the \
                 site's pages an Unfixed host banner: figures indicative only); to fix it, set what failed and pin a core with --cpu N (or cpu in \
                 systems/{system}.toml)"
            )),
        }
    };
    vec![counter_finding, host]
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
/// An error that says no engine answered gets what `doctor` finds missing for each
/// engine and the fix, in its words (the engine layer cannot call a command).
pub fn explain(e: anyhow::Error, sh: &Shell) -> anyhow::Error {
    if !e.chain().any(|c| c.is::<crate::container::engine::NoEngine>()) {
        return e;
    }
    anyhow::anyhow!(
        "{e:#}. What `cargo xtask doctor` finds missing:\n{}\n(--engine host builds on this machine with its \
         unpinned compilers and no sandbox; see --help)",
        missing_engines(sh)
    )
}

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

    fn gate(failed: &[(&str, &str)], cpu: Option<usize>) -> Gate {
        let mut checks: Vec<hostgate::Check> = failed
            .iter()
            .map(|(name, detail)| hostgate::Check { name: (*name).into(), ok: false, detail: (*detail).into() })
            .collect();
        checks.push(hostgate::Check { name: "boost".into(), ok: true, detail: "cpufreq/boost = 0 (needs 0)".into() });
        Gate { cpu, checks, overridden: false }
    }

    /// Doctor says the counter bench will read (never "cycles" where bench gets the TSC)
    /// and whether bench's host gate will let it time, with the flag that overrides it.
    #[test]
    fn doctor_names_what_bench_reads_and_whether_it_will_time() {
        let vm = HostCounter { arch: Arch::X86_64, emulated: false, paranoid: Some(2), probe: Err(libc::ENOENT) };
        let unfixed = gate(
            &[
                ("governor", "cpu0 has no cpufreq governor (no frequency control visible)"),
                ("pinned", "not pinned: pass --cpu N"),
            ],
            None,
        );
        let f = timing(&unfixed, &vm, "local");
        assert_eq!(
            f[0].detail,
            "bench reads the TSC (ticks at its measured frequency, not cycles): perf_event_open: \
             no user-space cycle event on this machine (errno 2; a virtual machine without a virtual PMU, typically); \
             records and pages name the counter"
        );
        assert!(!f[0].ok && !f[0].required);
        assert_eq!(
            f[1].detail,
            "not fixed: bench and campaign refuse to time here (exit 3) unless you pass --allow-unfixed-host; the \
             gate's failed checks on cpu0 (not pinned): cpu0 has no cpufreq governor (no frequency control visible); \
             not pinned: pass --cpu N"
        );
        assert!(f[1].fix.as_deref().unwrap().starts_with("to time anyway, add --allow-unfixed-host"));
        assert!(f[1].fix.as_deref().unwrap().contains("systems/local.toml"));

        let metal = HostCounter { probe: Ok(()), ..vm.clone() };
        let f = timing(&gate(&[], Some(2)), &metal, "x86_1");
        assert!(f.iter().all(|f| f.ok && f.fix.is_none()), "{f:?}");
        assert_eq!(f[0].detail, "bench reads CPU cycles (perf_event_open): perf_event_open answers here");
        assert_eq!(f[1].detail, "fixed: bench's host gate passes on cpu2");

        // Root's probe succeeds where the sandbox's user is refused.
        let root = HostCounter { paranoid: Some(3), ..metal.clone() };
        let f = timing(&gate(&[], Some(2)), &root, "x86_1");
        assert!(f[0].detail.starts_with("bench reads the TSC") && f[0].detail.contains("perf_event_paranoid = 3"));
        assert_eq!(f[0].fix.as_deref(), Some("sysctl -w kernel.perf_event_paranoid=2"));
        let arm = HostCounter { arch: Arch::Aarch64, probe: Err(libc::EACCES), ..vm };
        assert!(timing(&gate(&[], Some(2)), &arm, "arm_1")[0].detail.starts_with("bench reads CNTVCT_EL0"));
        let emulated = HostCounter { emulated: true, ..metal };
        assert!(timing(&gate(&[], Some(2)), &emulated, "local")[0].detail.contains("qemu-user"));
    }

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
