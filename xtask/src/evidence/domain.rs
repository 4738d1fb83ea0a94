//! The domain types that evidence records, defined here so that the schema imports
//! nothing above it: plans, limits and outcomes, timing statistics, the host gate, the
//! platform. Their behaviour stays in the modules that own it (`impl` blocks there),
//! which re-export each type under its old path.

use serde::{Deserialize, Serialize};

use crate::sha::Sha256Hex;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Plan {
    pub flag_set: String,
    pub flags: Vec<String>,
    pub steps: Vec<Step>,
    /// The KAT program's command line; its first word is relative to the build folder.
    pub run: Vec<String>,
    /// The build's one program ((`recipe::PROGRAM`)) and the driver each of its modes stands
    /// for (driver program → mode), when its drivers are linked into one; empty when
    /// every driver is a program of its own (pinned crates, cmake, profile, ct).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub modes: std::collections::BTreeMap<String, String>,
}

/// One applied patch, as every record lists it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PatchRecord {
    pub file: String,
    pub sha256: Sha256Hex,
    pub reason: String,
    /// The architectures it applies to (`Arch:` line); empty: all.
    #[serde(default)]
    pub arches: Vec<Arch>,
}

/// Where a source tree came from; copied into every record.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Provenance {
    Crate {
        name: String,
        version: String,
        checksum: Sha256Hex,
    },
    Archive {
        file: String,
        sha256: Sha256Hex,
    },
    /// `path` is the folder's own name, never where it lies on the host: the tree
    /// digest identifies it, and the machine that ran a command is no business of its
    /// evidence.
    Directory {
        path: String,
        tree_sha256: Sha256Hex,
        note: String,
    },
}

/// Where untrusted commands run; recorded as `podman`, `docker` or `host`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// The host's own compilers: nothing is pinned or isolated.
    Host,
    #[serde(untagged)]
    Container(Engine),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Podman,
    Docker,
}

/// Resource bounds of every sandboxed command.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Limits {
    pub memory: String,
    pub pids: u32,
    /// Most bytes kept of a command's output; also the largest file it may write.
    pub output_cap_bytes: u64,
    /// Let `perf_event_open` through the engine's seccomp filter (timing only): the
    /// default profiles allow it only with `CAP_SYS_ADMIN`, which is not granted instead.
    pub perf_events: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "value", rename_all = "snake_case")]
pub enum Outcome {
    Exited(i32),
    /// Killed by this signal (an exit status of 128+N from the container's init).
    Signalled(i32),
    /// The tool's own clock ran out and the tool killed the command.
    TimedOut,
    /// Killed by the memory limit.
    OutOfMemory,
    /// Printed more than the output cap; the tool killed it.
    OutputLimit,
    /// Wrote more into its folder than the disk guard allows; the tool killed it.
    DiskLimit,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gate {
    pub cpu: Option<usize>,
    pub checks: Vec<Check>,
    /// Set when the user chose to time anyway.
    pub overridden: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Aggregate {
    /// Trials × iterations of the aggregated (not replaced) trials.
    pub n: u64,
    pub trials: usize,
    pub iterations: u64,
    pub mean_ns: f64,
    /// Counter ticks per operation (cycles only when the counter counts cycles).
    pub mean_ticks: f64,
    pub ops_per_s: f64,
    pub median_trial_ns: f64,
    pub min_trial_ns: f64,
    pub max_trial_ns: f64,
    /// Relative spread: (max − min) / median of the per-trial means.
    pub spread: f64,
    /// Median absolute deviation of the per-trial means, relative to the median.
    pub rel_mad: f64,
    /// Counter ticks per second measured over the aggregated trials.
    pub counter_hz: f64,
}

/// Knobs of a plan; defaults are the reference campaign's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanSpec {
    pub trials: u32,
    pub trial_target_s: f64,
    pub min_total_ops: u64,
    pub max_iterations: u64,
    /// Re-runs allowed per disturbed trial.
    pub max_reruns: u32,
}

/// One timed process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Trial {
    pub iterations: u64,
    pub ns: u64,
    pub ticks: u64,
    /// Flagged by `stats::disturbed`; a flagged trial is replaced by a re-run when allowed.
    #[serde(default)]
    pub disturbed: bool,
    /// Set on trials that were replaced by a re-run (kept in the record, not aggregated).
    #[serde(default)]
    pub replaced: bool,
}

/// The largest |t| of dudect's tests: which test, its measurements per class, and the
/// class means of all kept measurements.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welch {
    pub t: f64,
    pub test: String,
    pub n: [u64; 2],
    pub mean_ns: [f64; 2],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arch {
    #[serde(rename = "x86_64", alias = "amd64")]
    X86_64,
    #[serde(alias = "arm64")]
    Aarch64,
}

impl Arch {
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Aarch64];

    /// The names an operator may write for it, the canonical (uname's) first.
    pub fn names(self) -> &'static [&'static str] {
        match self {
            Arch::X86_64 => &["x86_64", "amd64", "x86-64"],
            Arch::Aarch64 => &["aarch64", "arm64"],
        }
    }

    /// The architecture one of [`Arch::names`] names, in any case.
    pub fn parse(name: &str) -> Option<Arch> {
        Arch::ALL.into_iter().find(|a| a.names().iter().any(|n| n.eq_ignore_ascii_case(name)))
    }

    pub fn host() -> Arch {
        match std::env::consts::ARCH {
            "aarch64" => Arch::Aarch64,
            _ => Arch::X86_64,
        }
    }
    /// Debian's name for the architecture.
    pub fn debian(self) -> &'static str {
        match self {
            Arch::X86_64 => "amd64",
            Arch::Aarch64 => "arm64",
        }
    }
    /// The name prose uses: `x86-64`, `AArch64`.
    pub fn display(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86-64",
            Arch::Aarch64 => "AArch64",
        }
    }
    pub fn uname(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Aarch64 => "aarch64",
        }
    }
}

/// One build step; it runs in the build folder, and `output` (relative to it) is the
/// file it makes. An optional step may fail without failing the build.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Step {
    pub what: String,
    pub argv: Vec<String>,
    pub output: Option<String>,
    #[serde(default)]
    pub optional: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum GroupKind {
    /// The ICCS placeholder hash functions.
    IccsHash,
    /// The ICCS DRNG.
    IccsDrng,
    /// A symmetric primitive of the submission's own (a bypass of the ICCS functions).
    Direct,
    /// The randomness source of a NIST-API submission.
    Randombytes,
}

/// How the KAT replay treats in/out lengths between records (a recorded choice).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lengths {
    #[default]
    Carry,
    Reset,
}

/// How a KAT text is made canonical before its digest (`kat::Mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The bytes exactly as written (`PQClean`'s `nistkat-sha256`, liboqs's kats.json).
    Raw,
    /// CR and trailing blanks removed, empty lines dropped, every line ends in LF.
    Strict,
    /// As strict, and `*_Len = ...` lines dropped.
    Nolen,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum EngineChoice {
    #[default]
    Auto,
    Podman,
    Docker,
    Host,
}

impl EngineChoice {
    pub const ALL: [EngineChoice; 4] =
        [EngineChoice::Auto, EngineChoice::Podman, EngineChoice::Docker, EngineChoice::Host];

    /// What the operator writes for it.
    pub fn name(self) -> &'static str {
        match self {
            EngineChoice::Auto => "auto",
            EngineChoice::Podman => "podman",
            EngineChoice::Docker => "docker",
            EngineChoice::Host => "host",
        }
    }
}

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
    /// Where this system's measurement method is described (page §1); absent: "not given".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}
