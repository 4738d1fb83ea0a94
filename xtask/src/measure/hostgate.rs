//! The host gate: is this machine fixed enough to time on? Reads sysfs and procfs
//! only; a check whose file is missing (virtual machines) counts as failed, because
//! nothing shows that the host is fixed.

use camino::Utf8Path;

use crate::evidence::domain::Arch;

pub use crate::evidence::domain::Check;

pub use crate::evidence::domain::Gate;

impl Gate {
    pub fn failed(&self) -> Vec<&Check> {
        self.checks.iter().filter(|c| !c.ok).collect()
    }
}

fn read(root: &Utf8Path, path: &str) -> Option<String> {
    std::fs::read_to_string(root.join(path.trim_start_matches('/'))).ok().map(|s| s.trim().to_owned())
}

/// Check the host as seen under `root` (`/` normally; a fake tree in tests).
pub fn check(root: &Utf8Path, cpu: Option<usize>, arch: Arch) -> Gate {
    let n = cpu.unwrap_or(0);
    let cpufreq = format!("sys/devices/system/cpu/cpu{n}/cpufreq");
    let mut checks = Vec::new();
    let mut push = |name: &str, ok: bool, detail: String| checks.push(Check { name: name.into(), ok, detail });

    match read(root, "proc/sys/kernel/perf_event_paranoid").and_then(|s| s.parse::<i32>().ok()) {
        Some(p) => push("perf_event_paranoid", p <= 2, format!("perf_event_paranoid = {p} (needs <= 2)")),
        None => push("perf_event_paranoid", false, "perf_event_paranoid unreadable".into()),
    }
    match read(root, &format!("{cpufreq}/scaling_governor")) {
        Some(g) => push("governor", g == "performance", format!("cpu{n} governor {g} (needs performance)")),
        None => push("governor", false, format!("cpu{n} has no cpufreq governor (no frequency control visible)")),
    }
    let boost = match (
        read(root, "sys/devices/system/cpu/intel_pstate/no_turbo"),
        read(root, "sys/devices/system/cpu/cpufreq/boost"),
    ) {
        (Some(v), _) => Some((v == "1", format!("intel_pstate/no_turbo = {v} (needs 1)"))),
        (None, Some(v)) => Some((v == "0", format!("cpufreq/boost = {v} (needs 0)"))),
        (None, None) => None,
    };
    match boost {
        Some((ok, detail)) => push("boost", ok, detail),
        None => push("boost", false, "turbo/boost state unknown (no intel_pstate/no_turbo or cpufreq/boost)".into()),
    }
    match (read(root, &format!("{cpufreq}/scaling_min_freq")), read(root, &format!("{cpufreq}/scaling_max_freq"))) {
        (Some(lo), Some(hi)) => push("fixed frequency", lo == hi, format!("cpu{n} min {lo} kHz, max {hi} kHz")),
        _ => push(
            "fixed frequency",
            false,
            format!("cpu{n} frequency limits unknown ({} needs min = max)", arch.uname()),
        ),
    }
    match read(root, &format!("sys/devices/system/cpu/cpu{n}/topology/thread_siblings_list")) {
        Some(s) => push("SMT sibling offline", s == n.to_string(), format!("cpu{n} thread siblings: {s}")),
        None => push("SMT sibling offline", false, format!("cpu{n} topology unknown")),
    }
    match cpu {
        Some(c) => push("pinned", true, format!("measurement pinned to cpu{c}")),
        None => push("pinned", false, "not pinned: pass --cpu N".into()),
    }
    Gate { cpu, checks, overridden: false }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, content) in files {
            let p = dir.path().join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, content).unwrap();
        }
        dir
    }

    #[test]
    fn a_fixed_host_passes_every_check() {
        let t = tree(&[
            ("proc/sys/kernel/perf_event_paranoid", "1\n"),
            ("sys/devices/system/cpu/cpu2/cpufreq/scaling_governor", "performance\n"),
            ("sys/devices/system/cpu/cpu2/cpufreq/scaling_min_freq", "2707200\n"),
            ("sys/devices/system/cpu/cpu2/cpufreq/scaling_max_freq", "2707200\n"),
            ("sys/devices/system/cpu/cpufreq/boost", "0\n"),
            ("sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "2\n"),
        ]);
        let g = check(Utf8Path::from_path(t.path()).unwrap(), Some(2), Arch::Aarch64);
        assert!(g.failed().is_empty(), "{:?}", g.failed());
    }

    #[test]
    fn each_unfixed_setting_is_named() {
        let t = tree(&[
            ("proc/sys/kernel/perf_event_paranoid", "4\n"),
            ("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor", "schedutil\n"),
            ("sys/devices/system/cpu/intel_pstate/no_turbo", "0\n"),
            ("sys/devices/system/cpu/cpu0/topology/thread_siblings_list", "0,4\n"),
        ]);
        let g = check(Utf8Path::from_path(t.path()).unwrap(), None, Arch::X86_64);
        let failed: Vec<&str> = g.failed().iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            failed,
            ["perf_event_paranoid", "governor", "boost", "fixed frequency", "SMT sibling offline", "pinned"]
        );
        assert!(g.checks[1].detail.contains("schedutil"));
    }
}
