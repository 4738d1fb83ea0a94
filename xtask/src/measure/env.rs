//! `cargo xtask env`: the environment manifest of the seed pages (processor, machine,
//! clock, memory, OS/kernel, compiler and build tool, campaign start/end) with
//! warnings, the way `pyperf system show` reports a host.

use anyhow::Result;
use camino::Utf8Path;
use xshell::{cmd, Shell};

use crate::container::engine::Backend;
use crate::container::systems::OnSystem;
use crate::container::systems::SystemProfile;
use crate::container::toolchain::Toolchain;
use crate::evidence::domain::Arch;
use crate::evidence::schema::{Environment, ImageLock, ToolchainRecord};
use crate::measure::hostgate::{self, Gate};
use crate::project;

/// `env`: this host's environment manifest and the host gate.
#[derive(Debug, Clone)]
pub struct Env {
    pub on: OnSystem,
    pub cpu: Option<usize>,
}

impl Environment {
    /// The CPUs the timing ran on, as the seed pages say it.
    fn cpus(&self) -> String {
        match self.gate.cpu {
            Some(c) => format!("CPU {c}, one core"),
            None => format!("{} logical CPUs", self.logical_cpus),
        }
    }

    /// The manifest as the pages and the `env` command show it.
    pub fn rows(&self) -> [(&'static str, String); 7] {
        [
            ("processor", format!("{} ({})", self.processor, self.cpus())),
            ("machine", self.machine.clone()),
            ("clock", self.clock.clone()),
            ("memory", format!("{} MiB", self.memory_mib)),
            ("OS / kernel", format!("{} / {}", self.os, self.kernel)),
            ("compiler / build tool", format!("{} / {}", self.compiler, self.build_tool)),
            // `env` alone is no campaign: it has a moment, not a span.
            match &self.campaign_end {
                Some(end) => ("campaign start / end (UTC)", format!("{} / {end}", self.campaign_start)),
                None => ("taken at (UTC)", self.campaign_start.clone()),
            },
        ]
    }
}

fn read(path: &str) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find(|l| l.split(':').next().map(str::trim) == Some(key))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_owned())
}

/// First line of `<program> --version` on the host.
fn host_version(sh: &Shell, program: &str) -> String {
    cmd!(sh, "{program} --version")
        .quiet()
        .ignore_stderr()
        .read()
        .ok()
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_else(|| format!("{program}: not found"))
}

/// Describe this host; `tc` gives the compiler and build tool actually used.
/// The environment manifest, with the host gate the command evaluated (once: the
/// manifest and the records carry the same gate, override included).
pub fn collect(
    sh: &Shell,
    system: &SystemProfile,
    gate: &Gate,
    arch: Arch,
    tc: Option<&ToolchainRecord>,
) -> Environment {
    let cpu = gate.cpu;
    let cpuinfo = read("/proc/cpuinfo").unwrap_or_default();
    let processor = cpuinfo_field(&cpuinfo, "model name")
        .or_else(|| {
            let lscpu = cmd!(sh, "lscpu").quiet().ignore_stderr().read().ok()?;
            lscpu.lines().find_map(|l| l.strip_prefix("Model name:")).map(|l| l.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    let virtualized = cpuinfo_field(&cpuinfo, "flags").is_some_and(|f| f.split(' ').any(|x| x == "hypervisor"));
    let machine =
        match (read("/sys/devices/virtual/dmi/id/sys_vendor"), read("/sys/devices/virtual/dmi/id/product_name")) {
            (Some(v), Some(p)) => format!("{v} {p}"),
            _ => read("/proc/device-tree/model").map_or("unknown".into(), |m| m.trim_end_matches('\0').to_owned()),
        };
    let n = cpu.unwrap_or(0);
    let freq = |f: &str| read(&format!("/sys/devices/system/cpu/cpu{n}/cpufreq/{f}"));
    let clock = match (freq("scaling_min_freq"), freq("scaling_max_freq"), freq("scaling_governor")) {
        (Some(lo), Some(hi), gov) => format!(
            "cpu{n}: min {:.2} GHz, max {:.2} GHz, governor {}",
            lo.parse::<f64>().unwrap_or(0.0) / 1e6,
            hi.parse::<f64>().unwrap_or(0.0) / 1e6,
            gov.unwrap_or_else(|| "unknown".into())
        ),
        _ => "unknown: no cpufreq interface".into(),
    };
    let memory_mib = read("/proc/meminfo")
        .and_then(|m| cpuinfo_field(&m, "MemTotal"))
        .and_then(|v| v.split_whitespace().next().and_then(|k| k.parse::<u64>().ok()))
        .map_or(0, |kib| kib / 1024);
    let os = read("/etc/os-release")
        .and_then(|r| r.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_owned())))
        .unwrap_or_else(|| "unknown".into());
    let kernel = read("/proc/sys/kernel/osrelease").unwrap_or_else(|| "unknown".into());
    let (compiler, build_tool) = match tc {
        Some(t) => (t.gcc_version.clone(), t.cmake_version.clone()),
        None => (host_version(sh, "gcc"), host_version(sh, "cmake")),
    };
    let mut warnings: Vec<String> = gate.failed().iter().map(|c| c.detail.clone()).collect();
    if virtualized {
        warnings.push(
            "virtual machine: hardware cycle counters are usually not exposed; timings use the TSC or cntvct_el0"
                .into(),
        );
    }
    if arch != Arch::host() {
        warnings.push(format!(
            "{} runs under qemu-user emulation: timings are not measurements of that architecture",
            arch.uname()
        ));
    }
    Environment {
        schema: crate::evidence::schema::version::<Environment>(),
        system: system.clone(),
        processor,
        logical_cpus: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        machine,
        clock,
        memory_mib,
        os,
        kernel,
        compiler,
        build_tool,
        virtualized,
        campaign_start: project::now_utc(),
        campaign_end: None,
        gate: gate.clone(),
        warnings,
    }
}

impl Env {
    pub fn run(self, sh: &Shell) -> Result<()> {
        let profile = SystemProfile::load(&self.on.system)?;
        let arch = profile.arch(self.on.target.arch);
        let cpu = self.cpu.or(profile.cpu);
        // The compilers of the pinned image when it exists; the host's otherwise.
        let backend = Backend::select(sh, self.on.target.engine)?;
        let lock = match backend {
            Backend::Container(engine) => {
                let tag = Toolchain::load(&profile.toolchain(&self.on.toolchain))?.tag(arch);
                match engine.image_id(sh, &tag)? {
                    Some(_) => ImageLock::load(engine, &tag),
                    None => None,
                }
            }
            Backend::Host => None,
        };
        let record = lock.map(|l| ToolchainRecord::from_lock(&l, backend));
        let gate = hostgate::check(Utf8Path::new("/"), cpu, arch);
        let env = collect(sh, &profile, &gate, arch, record.as_ref());
        if crate::ui::json() {
            crate::ui::emit(&env)?;
            return Ok(());
        }
        let system = ("system", format!("{} ({})", env.system.name, env.system.description));
        for (k, v) in std::iter::once(system).chain(env.rows()) {
            crate::say!("{k:<28} {v}");
        }
        crate::say!("\nHost gate:");
        for c in &env.gate.checks {
            crate::say!("  [{}] {:<22} {}", if c.ok { "ok" } else { "!!" }, c.name, c.detail);
        }
        if !env.warnings.is_empty() {
            crate::say!("\nWarnings:");
            for w in &env.warnings {
                crate::say!("- {w}");
            }
        }
        Ok(())
    }
}
