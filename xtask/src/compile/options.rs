//! What a verify, bench or ct run works on, as plain values: the command line
//! (`flags`) and `campaign`/`onboard` make them; the defaults live here, once.

use camino::Utf8PathBuf;

use crate::container::engine::Target;

/// Wall-clock limit of one KAT program run, unless `--timeout` or the manifest says
/// otherwise.
pub const KAT_TIMEOUT_SECS: u64 = 600;

/// Instances verified at a time by default: every core but the one timing pins, at least
/// one.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().saturating_sub(1).max(1))
}

/// A source named by the operator: `PATH`, `URL` or `ID=PATH|URL`.
#[derive(Debug, Clone, PartialEq)]
pub struct Given {
    /// The submission it is for; `None` in the plain form (one submission selected).
    pub id: Option<String>,
    pub path: Utf8PathBuf,
}

impl Given {
    pub fn is_url(&self) -> bool {
        self.path.as_str().contains("://")
    }
}

/// What a verify or bench run works on, and where its evidence goes.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// Submission ids or manifest paths; empty: the system profile's campaign set.
    pub ids: Vec<String>,
    pub archive: Vec<Given>,
    pub source_dir: Vec<Given>,
    pub target: Target,
    pub unsandboxed_host: bool,
    pub toolchain: Option<String>,
    pub out: Utf8PathBuf,
    pub system: String,
    /// Only these instance labels; empty: every instance.
    pub instances: Vec<String>,
    pub rebuild: bool,
    pub build_timeout: u64,
    /// Memory limit of every sandboxed command, engine syntax.
    pub memory: String,
    pub output_cap_mib: Option<u64>,
    pub build_disk_mib: u64,
    pub max_extract_mib: Option<u64>,
    pub max_entries: Option<u64>,
    pub max_ratio: Option<u64>,
}

impl Default for Inputs {
    fn default() -> Inputs {
        Inputs {
            ids: Vec::new(),
            archive: Vec::new(),
            source_dir: Vec::new(),
            target: Target::default(),
            unsandboxed_host: false,
            toolchain: None,
            out: "out".into(),
            system: "local".into(),
            instances: Vec::new(),
            rebuild: false,
            build_timeout: 1800,
            memory: "4g".into(),
            output_cap_mib: None,
            build_disk_mib: 4096,
            max_extract_mib: None,
            max_entries: None,
            max_ratio: None,
        }
    }
}

impl Inputs {
    /// The same run for other submissions (a campaign step).
    pub fn for_ids(ids: Vec<String>, target: Target, out: Utf8PathBuf, system: String) -> Inputs {
        Inputs { ids, target, out, system, ..Inputs::default() }
    }

    /// The extraction limits given by the operator (each wins over a manifest's).
    pub fn extract_limits(&self) -> crate::compile::submission::ArchiveLimits {
        crate::compile::submission::ArchiveLimits {
            max_extract_mib: self.max_extract_mib,
            max_entries: self.max_entries,
            max_ratio: self.max_ratio,
        }
    }
}
