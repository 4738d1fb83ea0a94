//! The evidence schema: every JSON file the tool writes and reads back, as plain
//! serde types with a schema version. Nothing reads these files any other way
//! (`evidence_is_read_through_its_types_only`), so renaming a field fails to compile
//! where it is used, and an old file is refused with a message instead of half-read.
//!
//! | file | type |
//! |---|---|
//! | `<out>/<system>/kat/<id>/summary.json` | [`Summary`] |
//! | `<out>/<system>/records/<id>/<label>__<op>.json` | [`Record`] |
//! | `<out>/<system>/records/<id>/environment.json` | [`Environment`] |
//! | `<out>/<system>/records/<id>/size_audit.json` | [`SizeAudit`] |
//! | `<out>/<system>/profile/<id>/<label>__<op>.json` | [`ProfileRecord`] |
//! | `<out>/<system>/profile/<id>/survey.json` | [`Survey`] |
//! | `<cache>/images/<tag>.<engine>.lock.json` | [`ImageLock`] |
//! | `<cache>/builds/<id>/<key>/build.json` | [`BuildRecord`] |
//! | `<cache>/sources/<sha256>.tree.json`, `<cache>/patched/<key>.tree.json` | [`TreeRecord`] |
//!
//! Field types that carry a rule of their own (statistics, gate, sizes, plans) live
//! with that rule and are used here.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use camino::Utf8Path;
use serde::{Deserialize, Serialize};

use crate::evidence::domain as kat;
pub use crate::evidence::domain::SystemProfile;
pub use crate::evidence::domain::{
    Aggregate, Arch, Backend, Gate, GroupKind, Lengths, Limits, Outcome, PatchRecord, Plan, PlanSpec, Provenance,
    Trial, Welch,
};
use crate::sha::Sha256Hex;

/// An operation, by its family's id (`keygen`, `sign`, `hash_4096`; `family::Operation`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct OpId(pub String);

impl OpId {
    pub fn new(id: &str) -> OpId {
        OpId(id.to_owned())
    }

    pub fn name(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for OpId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(&self.0)
    }
}

/// A KAT status: a fact the tool observed (`kat::verify`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Pass,
    Mismatch,
    Nokat,
    Buildfail,
    Cryptofail,
    Overflow,
    Loadfail,
    Timeout,
    Crash,
    /// The program printed more than the output cap.
    Outputlimit,
}

/// The counter the timing driver read (its own name for it in the JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CounterKind {
    /// Hardware CPU cycles, user space, through `perf_event_open`: the only real cycles.
    #[serde(rename = "perf-cycles")]
    PerfCycles,
    #[serde(rename = "tsc")]
    Tsc,
    #[serde(rename = "cntvct_el0")]
    CntvctEl0,
}

impl std::fmt::Display for CounterKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CounterKind::PerfCycles => "perf-cycles",
            CounterKind::Tsc => "tsc",
            CounterKind::CntvctEl0 => "cntvct_el0",
        })
    }
}

/// Sizes by the family's size ids (`pk`, `sk`, `ct`, `ss`, `sig`; `family::SizeName`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sizes(pub BTreeMap<String, u64>);

impl Sizes {
    pub fn of<const N: usize>(pairs: [(&str, u64); N]) -> Sizes {
        Sizes(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// The size `id`, 0 when the driver did not report it.
    pub fn get(&self, id: &str) -> u64 {
        self.0.get(id).copied().unwrap_or(0)
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CatalogRow {
    pub id: String,
    pub instance: String,
    pub sizes: Sizes,
    pub basis: Basis,
}

/// What a catalog size measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Basis {
    /// The encoded object as the API returns it.
    Encoded,
    MaximumVariable,
    NominalVariable,
}

/// A file the tool writes and reads back: through its type, at one schema version.
pub trait Evidence: Serialize + serde::de::DeserializeOwned {
    /// What the file is, for messages.
    const KIND: &'static str;
    const SCHEMA: u32;
    /// The command that writes it, for the message that refuses another schema.
    const WRITER: &'static str;
}

macro_rules! evidence {
    ($($t:ty: $kind:literal, $schema:literal, $writer:literal;)*) => {
        $(impl Evidence for $t {
            const KIND: &'static str = $kind;
            const SCHEMA: u32 = $schema;
            const WRITER: &'static str = $writer;
        })*
    };
}

evidence! {
    Summary: "KAT summary", 4, "cargo xtask verify";
    Record: "timing record", 5, "cargo xtask bench";
    Environment: "environment manifest", 1, "cargo xtask bench";
    SizeAudit: "size audit", 2, "cargo xtask bench";
    ImageLock: "image lock", 1, "cargo xtask image build";
    BuildRecord: "build record", 2, "cargo xtask verify (the build is made again)";
    TreeRecord: "source tree record", 1, "cargo xtask verify (the tree is made again)";
    ProfileRecord: "profile record", 3, "cargo xtask profile";
    Survey: "symmetric-primitive survey", 4, "cargo xtask profile";
    CtRecord: "constant-time record", 2, "cargo xtask ct";
    SanitizeRecord: "sanitizer record", 1, "cargo xtask sanitize";
}

/// The top-level fields in which two records of one type differ, as serialized (a field
/// a type compares loosely, or one added later, still counts), leaving out `except`.
pub fn differing_fields<T: Serialize>(a: &T, b: &T, except: &[&str]) -> Result<Vec<String>> {
    let (serde_json::Value::Object(a), serde_json::Value::Object(b)) =
        (serde_json::to_value(a)?, serde_json::to_value(b)?)
    else {
        bail!("not a JSON object");
    };
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    Ok(keys.into_iter().filter(|k| !except.contains(&k.as_str()) && a.get(*k) != b.get(*k)).cloned().collect())
}

/// The schema version this harness writes for `T`.
pub const fn version<T: Evidence>() -> u32 {
    T::SCHEMA
}

/// Read an evidence file; None when there is none. A file of another schema is refused
/// with a message saying what to re-run, never half-read.
pub fn read<T: Evidence>(path: &Utf8Path) -> Result<Option<T>> {
    #[derive(Deserialize)]
    struct Version {
        schema: Option<u32>,
    }
    // A dangling link is no absent file: only what is not there at all is None.
    if std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
        return Ok(None);
    }
    let text = read_text(path)?;
    let version: Version = serde_json::from_str(&text).with_context(|| format!("{path} is not a {}", T::KIND))?;
    if version.schema != Some(T::SCHEMA) {
        let found = version.schema.map_or("none".to_owned(), |s| s.to_string());
        bail!(
            "{path} is a {} of schema {found}; this harness reads schema {}: re-run `{}` for it",
            T::KIND,
            T::SCHEMA,
            T::WRITER
        );
    }
    let value =
        serde_json::from_str(&text).with_context(|| format!("{path}: not a {} of schema {}", T::KIND, T::SCHEMA))?;
    Ok(Some(value))
}

/// The text of an evidence file through the one reader: no link, no special file,
/// nothing above [`crate::project::EVIDENCE_JSON_CAP`].
fn read_text(path: &Utf8Path) -> Result<String> {
    let bytes = crate::project::read_regular(path, crate::project::EVIDENCE_JSON_CAP)?;
    String::from_utf8(bytes).with_context(|| format!("{path} is not UTF-8 text"))
}

/// The one text form of every evidence file: pretty JSON and a final newline.
pub fn text<T: Evidence>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).expect("evidence types are plain data");
    text.push('\n');
    text
}

/// Write an evidence file atomically.
pub fn write<T: Evidence>(path: &Utf8Path, value: &T) -> Result<()> {
    crate::project::write_atomic(path, text(value).as_bytes())
}

/// Read `path` through its type and write it again: the same bytes, or why not.
pub fn round_trip<T: Evidence>(path: &Utf8Path) -> std::result::Result<(), String> {
    let value: T = read(path).map_err(|e| format!("{e:#}"))?.ok_or("missing")?;
    let bytes = read_text(path).map_err(|e| format!("{e:#}"))?;
    if text(&value) == bytes {
        Ok(())
    } else {
        Err(format!("{path} does not read back as a {} byte for byte", T::KIND))
    }
}

// ---- KAT summary (verify)

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema: u32,
    pub id: String,
    pub name: String,
    pub system: String,
    pub system_profile: SystemProfile,
    pub harness_commit: String,
    pub started: String,
    pub finished: String,
    pub toolchain: ToolchainRecord,
    pub source: Provenance,
    pub patches: Vec<PatchRecord>,
    pub kat_manifest: String,
    pub kat_manifest_sha256: String,
    pub limits: Limits,
    pub kat_timeout_secs: u64,
    pub build_timeout_secs: u64,
    /// In manifest order; entries of earlier runs with the same toolchain, source and
    /// KAT manifest are kept when a run covers only some instances.
    pub instances: Vec<InstanceResult>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstanceResult {
    pub label: String,
    pub status: Status,
    pub flag_set: String,
    pub flags: Vec<String>,
    pub kat_file: Option<String>,
    pub mode: Option<kat::Mode>,
    pub records: Option<usize>,
    pub expected_sha256: Option<Sha256Hex>,
    pub actual_sha256: Option<Sha256Hex>,
    pub log: Option<String>,
    pub build_key: String,
    pub build_reused: bool,
    /// Digests the host took of the instance library and the KAT program after the build.
    pub library_sha256: Option<String>,
    pub program_sha256: Option<String>,
    pub commands: Vec<Vec<String>>,
    pub run_command: Vec<String>,
    pub run_outcome: Option<Outcome>,
    pub run_seconds: Option<f64>,
    /// Bytes the program printed (the log keeps at most the output cap).
    pub output_bytes: Option<u64>,
    /// The check on inputs drawn at run time that corroborates a matching digest; None
    /// when the digest did not match, or the manifest gives no API to check through.
    pub check: Option<Check>,
    /// The family's tampered-input check (a KEM's tampered ciphertexts), a verdict of its
    /// own beside the status; None where the family or the manifest has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tampered: Option<Check>,
    /// How the KAT driver passed in/out lengths between records (families that carry
    /// them: `kat.lengths` of the manifest).
    pub lengths: Option<Lengths>,
    pub message: Option<String>,
    /// The manifest's documented cause, when the status is the known KAT failure it
    /// documents (MISMATCH or NOKAT); never set on another status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub known_issue: Option<String>,
    /// Families whose KAT program writes several files (a hash function's four): one
    /// entry per file in the family's order, and `status` is the first that is not
    /// PASS. Empty for families with one file, whose fields above describe it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<KatFileResult>,
    /// The KAT run's container CPU as the host read it (families with one file), which
    /// bench holds the timed figures against (`bench::kat_cross_check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kat_cpu_ns: Option<u64>,
    /// The library as built, read by the host from its ELF file (`measure::elf`): code
    /// size and exported names. None in summaries written before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<LibraryElf>,
    pub finished: String,
    pub harness_commit: String,
}

/// An instance's library (`libinstance.so`) read by the host from its bytes, never run
/// (`measure::elf`): the bytes whose digest the build record holds, or why not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LibraryElf {
    /// The file's name in the build (no host folder).
    pub file: String,
    /// Why it could not be read (a link, a digest not the recorded one, a malformed
    /// ELF); every other field is then empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Class, byte order and machine (`ELF64 LSB x86-64`).
    #[serde(default)]
    pub format: String,
    /// Section sizes as binutils' `size` counts them (Berkeley form).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<CodeSize>,
    /// How many names the library exports (all of them, even past the list's bound).
    #[serde(default)]
    pub exported_count: u64,
    /// The exported names, sorted, at most `measure::elf::MAX_NAMES`, each at most
    /// `measure::elf::MAX_NAME_BYTES` bytes.
    #[serde(default)]
    pub exported: Vec<String>,
    /// Exported names another library or the harness in the same process would define
    /// too, by rule; a finding on the page, not a KAT status.
    #[serde(default)]
    pub clashes: Vec<Clash>,
}

/// The allocated sections of an ELF file, summed as binutils' `size` (Berkeley) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CodeSize {
    /// Executable or read-only: machine code, constants, and a shared object's
    /// dynamic-linking tables and unwind data.
    pub text: u64,
    /// Writable, with contents.
    pub data: u64,
    /// Writable, without contents (zero-initialised).
    pub bss: u64,
    /// The executable sections alone (part of `text`).
    pub code: u64,
}

/// Exported names flagged by one rule of `measure::elf::RULES`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clash {
    /// The rule's id (`randombytes`, `keccak`, `libc`).
    pub rule: String,
    /// Why a name of this rule clashes, in the page's words.
    pub why: String,
    pub symbols: Vec<String>,
}

/// One KAT file's recorded verdict, whichever way its family records it.
#[derive(Debug, Clone, Copy)]
pub struct FileView<'a> {
    /// The family's part; empty for a family's only file.
    pub part: &'a str,
    pub file: Option<&'a str>,
    pub status: Option<Status>,
    pub expected_sha256: Option<&'a Sha256Hex>,
    pub actual_sha256: Option<&'a Sha256Hex>,
    pub log: Option<&'a str>,
    pub run_seconds: Option<f64>,
    pub kept: bool,
}

impl InstanceResult {
    /// Its KAT files: the one the fields above describe, or each of `files`.
    pub fn file_views(&self) -> Vec<FileView<'_>> {
        if self.files.is_empty() {
            return vec![FileView {
                part: "",
                file: self.kat_file.as_deref(),
                status: Some(self.status),
                expected_sha256: self.expected_sha256.as_ref(),
                actual_sha256: self.actual_sha256.as_ref(),
                log: self.log.as_deref(),
                run_seconds: self.run_seconds,
                kept: false,
            }];
        }
        self.files
            .iter()
            .map(|f| FileView {
                part: &f.part,
                file: Some(&f.file),
                status: f.status,
                expected_sha256: f.expected_sha256.as_ref(),
                actual_sha256: f.actual_sha256.as_ref(),
                log: f.log.as_deref(),
                run_seconds: f.run_seconds,
                kept: f.kept,
            })
            .collect()
    }
}

/// One KAT file of an instance whose family writes several.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct KatFileResult {
    /// The family's name for it (`2_12`, `Loop`).
    pub part: String,
    pub file: String,
    /// None: not checked in this run (`--kat-files`) and no result of this build kept.
    pub status: Option<Status>,
    /// Where the result comes from: this run, or an earlier run of the same build.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kept: bool,
    pub mode: Option<kat::Mode>,
    pub expected_sha256: Option<Sha256Hex>,
    pub actual_sha256: Option<Sha256Hex>,
    pub log: Option<String>,
    pub run_command: Vec<String>,
    pub run_outcome: Option<Outcome>,
    pub run_seconds: Option<f64>,
    pub output_bytes: Option<u64>,
    pub message: Option<String>,
}

/// The check after a matching digest, on inputs drawn at run time (`family::Corroboration`):
/// the KEM replay, the signature verify contract.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Check {
    /// Which check (`replay`, `verify contract`).
    pub check: String,
    /// The inputs drawn at run time, hex, in record order.
    pub seeds: Vec<String>,
    pub verdict: CheckVerdict,
    /// What was compared, or the first thing that failed.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum CheckVerdict {
    Holds,
    /// The check itself failed (a disagreement, a program failure).
    Fails,
    /// A verifier returned 0 (valid) on a modified message, signature or key.
    AcceptsInvalid,
    /// A return value outside the API's contract.
    Breach,
}

impl Check {
    pub fn holds(&self) -> bool {
        self.verdict == CheckVerdict::Holds
    }
}

impl std::fmt::Display for CheckVerdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(match self {
            CheckVerdict::Holds => "holds",
            CheckVerdict::Fails => "fails",
            CheckVerdict::AcceptsInvalid => "accepts-invalid",
            CheckVerdict::Breach => "breach",
        })
    }
}

// ---- Timing record (bench)

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub schema: u32,
    pub id: String,
    pub label: String,
    pub op: OpId,
    pub system: String,
    pub quick: bool,
    pub emulated: bool,
    /// False under emulation: such figures must never be presented as measurements.
    pub timing_comparable: bool,
    pub counter: Counter,
    pub plan: PlanRecord,
    /// Every trial run, including replaced ones; `slot` is the trial position.
    pub trials: Vec<SlotTrial>,
    /// The driver's figures against the CPU time the host read (`bench::credible`).
    pub host_check: HostCheck,
    pub disturbed_trials: usize,
    pub reruns: usize,
    pub aggregate: Aggregate,
    pub sizes: SizeRecord,
    /// Lengths of the family's variable output (a signature) over every timed trial.
    pub out_len: Option<LenStats>,
    /// Calls that failed and were retried (signing attempts), over every timed trial.
    pub failed_attempts: u64,
    /// One `bench` invocation: records that share it were timed in the same run (a hash
    /// page compares only with baselines of its own run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Hash functions: content drawn at run time against the fixed reference content,
    /// over every run of the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<ContentControl>,
    pub memory: Memory,
    /// Single calls timed one by one in a run of their own (absent in records made
    /// before they were measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_call: Option<PerCall>,
    /// The core the trials ran on (absent: not confined to one by the host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core: Option<CoreUse>,
    /// The operation's time budget and the trials it allowed (absent: the plan's counts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
    pub environment: Environment,
    pub toolchain: ToolchainRecord,
    pub sandbox: Limits,
    pub host_gate: Gate,
    pub source: Provenance,
    pub patches: Vec<PatchRecord>,
    /// The build the figures come from (`<cache>/builds/<id>/<key[..20]>/`).
    pub build_key: String,
    pub library_sha256: String,
    pub driver_source_sha256: String,
    pub driver_sha256: String,
    pub harness_commit: String,
    pub commands: Commands,
    pub started: String,
    pub finished: String,
}

/// Hash functions: calls on the reference content and on content drawn at run time,
/// interleaved in a random order, and dudect's tests on their times
/// (`measure::stats::dudect`, computed by the host from every measurement).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContentControl {
    pub verdict: ContentVerdict,
    /// What the two classes are.
    pub classes: String,
    /// Measurements received over every run, per class.
    pub taken: [u64; 2],
    /// A verdict needs this many measurements in each class.
    pub min_per_class: u64,
    /// |t| above it: the speed depends on the content.
    pub threshold: f64,
    /// The largest |t| (negative when drawn content is the slower); None with too few.
    pub welch: Option<Welch>,
    /// Mean time per call on drawn content over that on the reference content: a figure,
    /// not the verdict.
    pub ratio: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ContentVerdict {
    /// |t| above the threshold: the time per call depends on the content.
    Depends,
    /// |t| at most the threshold on these measurements.
    NoneFound,
    /// Fewer measurements in a class than a verdict needs: none either way.
    TooFewMeasurements,
}

/// Lengths one operation returned: as the driver counts them, summed over trials.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LenStats {
    pub min: u64,
    pub max: u64,
    pub sum: u64,
    pub count: u64,
}

impl LenStats {
    /// Two counts as one; an empty count leaves the other as it is.
    pub fn merge(self, o: LenStats) -> LenStats {
        match (self.count, o.count) {
            (0, _) => o,
            (_, 0) => self,
            _ => LenStats {
                min: self.min.min(o.min),
                max: self.max.max(o.max),
                sum: self.sum + o.sum,
                count: self.count + o.count,
            },
        }
    }

    pub fn mean(&self) -> f64 {
        self.sum as f64 / self.count.max(1) as f64
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Counter {
    pub name: CounterKind,
    /// Only then are `mean_ticks` cycles.
    pub hardware_cycles: bool,
    pub measured_hz: f64,
    pub nominal_hz: Option<u64>,
    /// Why there are no hardware cycles: ENOENT/EOPNOTSUPP = the machine exposes none,
    /// EPERM/EACCES = forbidden (`perf_event_paranoid` or a seccomp filter).
    pub cycles_unavailable: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanRecord {
    pub spec: PlanSpec,
    pub iterations: u64,
    pub warmups: u64,
    pub fixed_iterations: bool,
    pub calibration: Vec<Calibration>,
    pub estimate_ns_per_op: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Calibration {
    pub iterations: u64,
    pub ns: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SlotTrial {
    pub slot: usize,
    #[serde(flatten)]
    pub trial: Trial,
    pub baseline_rss_kib: i64,
    pub peak_rss_kib: i64,
    /// What the driver says it spent on operations in this process.
    pub accounted_ns: u64,
    /// The container's CPU time read by the host; None when it could not be read.
    pub host_cpu_ns: Option<u64>,
    /// Busy time of the trial's core and its siblings over the trial, by every process
    /// on them (the host's `/proc/stat`, in its clock ticks): above `host_cpu_ns`, other
    /// work ran there. Absent when the trial was not confined to a core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores_busy_ns: Option<u64>,
}

/// The core a record's trials ran on, and what shared the machine with them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoreUse {
    /// The one core the trials' container was confined to (by the engine's cpuset).
    pub core: usize,
    /// Its other hardware threads, as the host's topology lists them.
    pub siblings: Vec<usize>,
    /// Every timing core of the run: one trial process at a time on each.
    pub timing_cores: Vec<usize>,
    /// Where the run's other work was confined; empty: it took turns with the timing
    /// steps (no core was left for it), or there was none (a lone bench).
    pub others_on: Vec<usize>,
    /// The run's other steps that ran while these trials did (None: not known, outside a
    /// campaign).
    pub beside: Option<Vec<String>>,
}

/// Whether a record's self-reported figures were checked from outside the process.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HostCheck {
    pub credibility: Credibility,
    pub rule: String,
    pub detail: Option<String>,
    /// What each run may spend outside its accounted time (`bench::allowance_ns`);
    /// absent in records made before it was measured per run (then 100 ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowance_ns: Option<u64>,
    /// The longer run the host checked when the trials were too short for the bound
    /// (`bench::PROBE_FACTOR`); not among the figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Probe>,
    /// The KAT run of the same library, held against the timed figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kat_run: Option<KatRunCheck>,
}

/// The CPU the host read of a KAT run against what the timed figures say it needed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KatRunCheck {
    pub kat_cpu_ns: u64,
    pub records: u64,
    /// Records × the sum of the mean times of the operations each record calls.
    pub predicted_ns: u64,
    pub credible: bool,
}

/// One run outside a record's figures, for the host's check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub iterations: u64,
    pub ns: u64,
    pub accounted_ns: u64,
    pub host_cpu_ns: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Credibility {
    /// Every run within the bound of the host's reading.
    Checked,
    /// Some run used far more CPU than the driver reported.
    NotCredible,
    /// The host could not read the CPU time: the figures are the driver's word alone.
    SelfReported,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeRecord {
    /// What the instance's API reports as maximum lengths.
    pub api: Sizes,
    /// What the calls returned.
    pub returned: Sizes,
    pub external: Option<CatalogRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Memory {
    /// Sum of the `PT_LOAD` memory sizes of the instance library.
    pub static_image_bytes: u64,
    /// Median over the aggregated trials of the resident set after setup.
    pub baseline_rss_kib: i64,
    /// Highest `VmHWM` of any aggregated trial (driver and libc included).
    pub peak_rss_kib: i64,
    /// The stack high-water mark of one call, from a run of its own (absent in records
    /// made before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<StackMark>,
}

/// Single calls of the operation, each bracketed by counter reads, in an untimed run of
/// its own after the trials (`<op> <n> <warmups> [cpu] calls`, drivers/bench_core.h): the
/// kind of figure eBACS reports. The samples are kept as the driver sent them; the
/// figures are derived from them by `measure::stats::per_call`, and a record whose
/// figures are not what its samples give is refused.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PerCall {
    /// The run's command line, as run.
    pub command: Vec<String>,
    /// Counter ticks around an empty call, read before the calls: the counter's overhead.
    pub overhead: Vec<u64>,
    /// Counter ticks around each call, in order, overhead included.
    pub ticks: Vec<u64>,
    /// Quantiles of the calls less the median overhead; none when the run failed or its
    /// report was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub figures: Option<PerCallFigures>,
    /// Why the figures are in doubt: their median is far below the trials' CPU time per
    /// operation by the host's reading (`measure::bench::per_call_doubt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doubt: Option<String>,
    /// Why there are no figures: the run failed or its report was refused
    /// (`measure::bench::per_call_check`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

/// Nearest-rank quantiles of per-call counter ticks, the median overhead subtracted
/// (a call below it counts 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PerCallFigures {
    pub calls: u64,
    pub overhead_ticks: u64,
    pub q1: u64,
    pub median: u64,
    pub q3: u64,
    pub p99: u64,
    pub min: u64,
    pub max: u64,
}

/// The stack one call of the operation used, as the timing driver measured it in an
/// untimed run of its own (`<op> 1 0 [cpu] stack`: pqm4's method, drivers/bench_core.h).
/// Self-reported from inside the candidate's process: bounds-checked, shown, never used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StackMark {
    /// The run's command line, as run.
    pub command: Vec<String>,
    /// Bytes from the driver's stack pointer at the call to the deepest word written.
    pub used_bytes: Option<u64>,
    /// Bytes painted below the driver's frame.
    pub painted_bytes: Option<u64>,
    /// The deepest painted word was written: the call used at least `used_bytes`.
    pub exceeded: bool,
    /// Why there is no figure: the run failed, or its report was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Commands {
    pub engine: Backend,
    pub image: Option<String>,
    pub build: Vec<Vec<String>>,
    pub driver: Vec<String>,
    /// One trial, as run in the sandbox (`timeout` added by the harness).
    pub trial: Vec<String>,
}

// ---- Environment manifest (env, bench)

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Environment {
    pub schema: u32,
    pub system: SystemProfile,
    pub processor: String,
    pub logical_cpus: usize,
    pub machine: String,
    pub clock: String,
    pub memory_mib: u64,
    pub os: String,
    pub kernel: String,
    pub compiler: String,
    pub build_tool: String,
    pub virtualized: bool,
    pub campaign_start: String,
    pub campaign_end: Option<String>,
    pub gate: Gate,
    pub warnings: Vec<String>,
}

// ---- Symmetric-primitive profile (profile)

/// One operation of one instance, timed on the profiling variant of its library.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ProfileRecord {
    pub schema: u32,
    pub id: String,
    pub label: String,
    pub op: OpId,
    pub system: String,
    pub emulated: bool,
    pub counter: CounterKind,
    /// Measured operations: iterations of the kept trials (warm-ups excluded).
    pub operations: u64,
    /// Per trial process, as planned (warm-ups run before the counters start).
    pub iterations: u64,
    pub warmups: u64,
    pub total_ticks: u64,
    pub groups: Vec<GroupShare>,
    /// Wrapped symbol → references no wrapper of its family sees (inside its own object
    /// file, an alias, `__real_`, nested in another family's wrapped code, data).
    pub unseen_call_sites: BTreeMap<String, u64>,
    /// Both builds' timings against the host's CPU reading (the less trustworthy).
    pub host_check: HostCheck,
    /// Mean time per operation: profiling variant over reference build, same run.
    pub overhead_ratio: f64,
    pub reference_mean_ns: f64,
    pub profiled_mean_ns: f64,
    pub warnings: Vec<String>,
    pub build_key: String,
    pub reference_build_key: String,
    pub library_sha256: String,
    pub toolchain: ToolchainRecord,
    pub host_gate: Gate,
    pub harness_commit: String,
    pub started: String,
    pub finished: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupShare {
    pub name: String,
    pub kind: GroupKind,
    pub family: String,
    /// Wrapped ticks over all ticks of the measured operations.
    pub share: f64,
    pub ticks: u64,
    pub symbols: Vec<SymbolCalls>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SymbolCalls {
    pub symbol: String,
    pub calls: u64,
    /// Mean over the measured operations: fractional where the count varies.
    pub calls_per_op: f64,
    pub ticks: u64,
}

/// Which symmetric implementations a submission compiles in and reaches, and the
/// verdict derived from them.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Survey {
    pub schema: u32,
    pub id: String,
    pub system: String,
    pub verdict: Verdict,
    /// The rule that produced the verdicts, in words.
    pub rule: String,
    pub notes: Vec<String>,
    /// What a verdict of absence cannot exclude, when some instance claims one.
    pub caveat: Option<String>,
    pub instances: Vec<InstanceSurvey>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InstanceSurvey {
    pub label: String,
    pub verdict: Verdict,
    /// Family → what shows it is in the library (constants found, symbols defined).
    pub compiled_in: BTreeMap<String, Vec<String>>,
    /// Groups with at least one measured call, with the operations that made them.
    pub reached: BTreeMap<String, Vec<OpId>>,
    pub notes: Vec<String>,
    /// What its verdict or a "dead" note cannot exclude (ICCS-only, none, dead).
    pub caveat: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    #[serde(rename = "ICCS-only")]
    IccsOnly,
    #[serde(rename = "bypass")]
    Bypass,
    #[serde(rename = "mixed")]
    Mixed,
    #[serde(rename = "instance-dependent")]
    InstanceDependent,
    /// No wrapped primitive was reached at all.
    #[serde(rename = "none")]
    None,
    /// The library has a way around the wrappers, or its timings are not credible:
    /// neither ICCS-only nor none can be claimed.
    #[serde(rename = "undetermined")]
    Undetermined,
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = match self {
            Verdict::IccsOnly => "ICCS-only",
            Verdict::Bypass => "bypass",
            Verdict::Mixed => "mixed",
            Verdict::InstanceDependent => "instance-dependent",
            Verdict::None => "none",
            Verdict::Undetermined => "undetermined",
        };
        f.pad(s)
    }
}

// ---- Size audit (bench)

/// The API sizes of one submission against the external catalog.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SizeAudit {
    pub schema: u32,
    pub id: String,
    pub disagreements: Vec<Disagreement>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Disagreement {
    pub id: String,
    pub instance: String,
    /// The catalog column (`public_key`), or `row` when the catalog has no row.
    pub field: String,
    pub api: Option<u64>,
    pub catalog: Option<u64>,
    pub basis: Option<Basis>,
}

// ---- Toolchain, image lock, build record (cache)

/// The toolchain a run used, as every record states it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ToolchainRecord {
    /// The spec name, or `host (unpinned, unsandboxed)` (`engine::HOST_TOOLCHAIN`).
    pub toolchain: String,
    pub pinned: bool,
    pub engine: Backend,
    pub arch: Arch,
    pub emulated: bool,
    pub image: Option<String>,
    pub image_id: Option<String>,
    pub rootfs_sha256: Option<String>,
    pub gcc_version: String,
    pub cmake_version: String,
    /// The image's installed packages ([`PackageDigest`]); None in records written
    /// before it was recorded, and for unpinned host toolchains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages: Option<PackageDigest>,
}

/// What an image turned out to contain; kept in the cache and copied into records.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ImageLock {
    pub schema: u32,
    pub toolchain: String,
    pub spec_sha256: String,
    pub arch: Arch,
    pub tag: String,
    pub image_id: String,
    pub rootfs_sha256: Option<String>,
    pub gcc_version: String,
    pub cmake_version: String,
    pub uname_m: String,
    /// Every installed package and version.
    pub packages: BTreeMap<String, String>,
    pub checked_at: String,
    /// An analysis image (`ct`): the toolchain image it was made from and what was
    /// added to it; None for a toolchain image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub analysis: Option<AnalysisLayer>,
}

/// What an analysis image adds to its toolchain image.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct AnalysisLayer {
    pub base_tag: String,
    pub base_image_id: String,
    /// The packages pinned for the analysis, as installed.
    pub pinned: BTreeMap<String, String>,
    /// The first line of `valgrind --version`.
    pub valgrind_version: String,
}

/// What the host knows of a finished build; lives next to `out/`, out of every
/// sandbox's reach.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuildRecord {
    pub schema: u32,
    pub key: String,
    pub plan: Plan,
    /// The files of the source tree the build saw (relative path → SHA-256 of the copy it
    /// read): what the manifest names and the compiler's dependency pass listed. Empty for
    /// a host build, which compiles the tree in place.
    pub inputs: BTreeMap<String, String>,
    /// Every file the build left in `out/` (relative path → `file <sha256>`,
    /// `link <target>` or `special`), read without following links.
    pub files: BTreeMap<String, String>,
    /// Optional steps that failed, with the end of their output.
    pub optional_failures: Vec<StepFailure>,
    pub finished: String,
}

/// What the host made in a cached source tree (extracted from a checked archive, or a
/// patched copy): every entry, written when the tree was made and checked before each
/// reuse. It lives next to the tree, never inside it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TreeRecord {
    pub schema: u32,
    /// What the tree is cached under: the archive's SHA-256, or the patched tree's key.
    pub key: String,
    /// Every entry below the tree (relative path → `dir`, `file <sha256>`, `link <target>`
    /// or `special`), read without following links.
    pub files: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct StepFailure {
    pub what: String,
    pub log: String,
}

// ---- Run reports (`--json`): what a command did, for scripts; not evidence.

/// `verify`, `bench` and `profile --json`: one row per result the run produced or
/// kept, the failures, and where the evidence lies.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RunReport {
    pub command: String,
    pub system: String,
    pub out: String,
    /// Every result is clean (the exit status is 0).
    pub clean: bool,
    pub results: Vec<ResultRow>,
    pub failures: Vec<String>,
}

/// One instance's KAT verdict, or one (instance, operation)'s timing or profile.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ResultRow {
    pub id: String,
    pub instance: String,
    pub op: Option<String>,
    /// `PASS`, `MISMATCH`, ... for verify; `timed` or `profiled` otherwise.
    pub status: String,
    /// The corroborating check's verdict, when one ran.
    pub check: Option<String>,
    pub kat_sha256: Option<String>,
    pub median_ns_per_op: Option<f64>,
    /// `kept` when an earlier result was kept (--resume), else `new`.
    pub origin: String,
}

impl ResultRow {
    /// The row of a timing or profile record: no KAT digest, no check, made anew.
    pub fn measured(id: &str, instance: &str, op: &OpId, status: &str) -> ResultRow {
        ResultRow {
            id: id.to_owned(),
            instance: instance.to_owned(),
            op: Some(op.name().to_owned()),
            status: status.to_owned(),
            check: None,
            kat_sha256: None,
            median_ns_per_op: None,
            origin: "new".into(),
        }
    }
}

/// What a command that failed prints under `--json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ErrorReport {
    pub error: String,
    pub exit_code: i32,
}

/// `campaign --json`: each step with its outcome (`done`, `kept`, `skipped`,
/// `failed`) and seconds.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct CampaignReport {
    pub system: String,
    pub out: String,
    pub steps: Vec<CampaignStep>,
    pub seconds: f64,
    /// A step failed for the tool or the engine, not for a candidate.
    pub tool_failure: bool,
    /// `--archives`: the candidates whose archive was not in the folder, with what to fetch.
    #[serde(default)]
    pub missing: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CampaignStep {
    pub step: String,
    pub outcome: String,
    pub seconds: f64,
    pub detail: Option<String>,
}

// ---- Package lock digest (records) and comparison (compare --json)

/// The installed-package list of an image in one digest: SHA-256 of its canonical text,
/// one `name version` line per package in name order, each ending in a newline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct PackageDigest {
    pub count: usize,
    pub sha256: String,
}

impl ImageLock {
    pub fn package_digest(&self) -> PackageDigest {
        let text: String = self.packages.iter().map(|(name, version)| format!("{name} {version}\n")).collect();
        PackageDigest { count: self.packages.len(), sha256: crate::project::sha256_hex(text.as_bytes()) }
    }
}

/// What `cargo xtask compare --json` prints: both sides, what differs between them,
/// and one row per (submission, instance, operation) both sides timed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    pub a: ComparedSide,
    pub b: ComparedSide,
    /// False when refused: `differences` says why, `rows` is empty.
    pub compared: bool,
    pub allow_differences: bool,
    /// How images were told apart, each with the operations compared that way.
    pub image_basis: Vec<ImageBasisCount>,
    pub differences: Vec<Difference>,
    /// What differs but does not stop a comparison.
    pub notes: Vec<String>,
    /// What the runs of both sides were, said once above the table: quick runs and
    /// unfixed hosts, and what that means for the figures and the noise verdicts.
    #[serde(default)]
    pub caveats: Vec<String>,
    /// Which order the rows are in, in words.
    pub order: String,
    /// The rule behind `significance`, in words.
    pub noise_rule: String,
    pub rows: Vec<ComparedRow>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComparedSide {
    pub label: String,
    pub root: String,
    pub system: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ImageBasis {
    /// The installed packages and versions ([`PackageDigest`]).
    PackageLock,
    /// The root filesystem tarball's SHA-256 (records without a package digest).
    RootFilesystem,
    /// The engine's image ID (records with neither).
    ImageId,
    /// Neither side ran in an image (unpinned host toolchains).
    NoImage,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImageBasisCount {
    pub basis: ImageBasis,
    pub operations: usize,
}

/// One way the two sides differ in more than the machine.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Difference {
    /// `compiler`, `image`, `counter`...
    pub what: String,
    /// The whole sentence, as the page prints it.
    pub text: String,
    /// The operations it holds for (`submission instance operation`).
    pub operations: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComparedRow {
    pub id: String,
    pub instance: String,
    pub op: String,
    pub a: TrialSpread,
    pub b: TrialSpread,
    /// B's mean time per operation over A's.
    pub ratio: f64,
    /// The ratio's range over the trials: B's fastest over A's slowest, B's slowest
    /// over A's fastest.
    pub ratio_low: f64,
    pub ratio_high: f64,
    /// Two-sided p-value of the rank test on the kept trials' time per operation.
    pub p_value: f64,
    pub significance: Significance,
}

/// One side's kept (not replaced) trials, as time per operation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrialSpread {
    pub trials: usize,
    pub mean_ns: f64,
    pub median_ns: f64,
    pub min_ns: f64,
    pub max_ns: f64,
    /// Why this side's figures are indicative only (`stats::indicative`); empty: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub indicative: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Significance {
    /// The two sets of trials are separated beyond what chance orders them (p < 0.05).
    Significant,
    /// Within noise: the trials of both sides interleave too much to tell them apart.
    NotSignificant,
    /// Too few trials for any ordering to reach p < 0.05: no verdict either way.
    TooFewTrials,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden(file: &str) -> camino::Utf8PathBuf {
        crate::project::root().join("xtask/tests/golden").join(file)
    }

    #[test]
    fn one_file_of_each_kind_round_trips_byte_for_byte() {
        // Written by real runs (the size audit by hand, with both kinds of row): a
        // renamed, dropped or re-typed field fails here before it reaches a page.
        let checks = [
            round_trip::<Summary>(&golden("summary.json")),
            round_trip::<Record>(&golden("record.json")),
            round_trip::<Environment>(&golden("environment.json")),
            round_trip::<SizeAudit>(&golden("size_audit.json")),
            round_trip::<ImageLock>(&golden("image_lock.json")),
            round_trip::<BuildRecord>(&golden("build_record.json")),
            round_trip::<TreeRecord>(&golden("tree_record.json")),
            round_trip::<ProfileRecord>(&golden("profile_record.json")),
            round_trip::<Survey>(&golden("survey.json")),
        ];
        for c in checks {
            c.unwrap();
        }
    }

    #[test]
    fn another_schema_is_refused_with_what_to_do() {
        let t = tempfile::tempdir().unwrap();
        let path = camino::Utf8Path::from_path(t.path()).unwrap().join("summary.json");
        let text = std::fs::read_to_string(golden("summary.json")).unwrap();
        // The schema before the family model: operations and sizes were KEM-shaped.
        std::fs::write(&path, text.replacen("\"schema\": 4", "\"schema\": 3", 1)).unwrap();
        let e = format!("{:#}", read::<Summary>(&path).unwrap_err());
        assert!(e.contains("KAT summary of schema 3; this harness reads schema 4: re-run `cargo xtask verify`"), "{e}");
        std::fs::write(&path, "[]").unwrap();
        assert!(read::<SizeAudit>(&path).is_err(), "a bare list is not a size audit");
        assert!(read::<Summary>(&path.with_file_name("none.json")).unwrap().is_none());
    }

    #[test]
    fn the_reader_follows_no_link_opens_no_device_and_reads_nothing_oversize() {
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let outside = dir.join("outside.json");
        std::fs::copy(golden("summary.json"), &outside).unwrap();
        let link = dir.join("summary.json");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let e = format!("{:#}", read::<Summary>(&link).unwrap_err());
        assert!(e.contains("links are not followed"), "{e}");
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        assert!(read::<Summary>(&link).is_err());
        assert!(round_trip::<Summary>(&link).is_err());
        let dangling = dir.join("dangling.json");
        std::os::unix::fs::symlink(dir.join("nothing"), &dangling).unwrap();
        assert!(read::<Summary>(&dangling).is_err(), "a dangling link is no absent file");
        let e = format!("{:#}", read::<Summary>(camino::Utf8Path::new("/dev/zero")).unwrap_err());
        assert!(e.contains("not a regular file"), "{e}");
        // Sparse: refused by its size, before a byte is read.
        let big = dir.join("big.json");
        std::fs::File::create(&big).unwrap().set_len(1536 << 20).unwrap();
        let e = format!("{:#}", read::<Summary>(&big).unwrap_err());
        assert!(e.contains("is 1610612736 bytes, more than the 16777216 this reads"), "{e}");
    }

    /// Indexing by a string key (`v["field"]`): the character before `["` is part of
    /// an expression, not `&`, `!`, `(` or a space.
    fn string_key_lookups(code: &str) -> Vec<usize> {
        code.match_indices("[\"")
            .filter(|(i, _)| code[..*i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || "_])".contains(c)))
            .map(|(i, _)| code[..i].lines().count())
            .collect()
    }

    #[test]
    fn evidence_is_read_through_its_types_only() {
        // Everything the crate, its tests and benches read back goes through this
        // module's types: no untyped JSON, no lookups by string key. The one exception
        // is the engine's own seccomp profile, which is not evidence.
        let root = crate::project::root().join("xtask");
        let mut offences = Vec::new();
        for dir in ["src", "tests", "benches"] {
            for entry in walkdir::WalkDir::new(root.join(dir)) {
                let path = camino::Utf8PathBuf::from_path_buf(entry.unwrap().into_path()).unwrap();
                if path.extension() != Some("rs")
                    || path.ends_with("container/sandbox.rs")
                    || path.ends_with("evidence/schema.rs")
                {
                    continue;
                }
                let code = std::fs::read_to_string(&path).unwrap();
                for banned in ["serde_json::Value", "json!", "as_str().unwrap_or(\"-\")"] {
                    if code.contains(banned) {
                        offences.push(format!("{path}: {banned}"));
                    }
                }
                offences.extend(string_key_lookups(&code).iter().map(|l| format!("{path}:{l}: string key")));
            }
        }
        assert!(offences.is_empty(), "{offences:#?}");
        assert_eq!(string_key_lookups("let a = v[\"x\"];\nf(&[\"a\"]); vec![\"b\"]; r[0][\"y\"]"), [1, 2]);
    }
}

// ---- constant-time findings (ct)

/// One operation of one instance run under memcheck with its secrets undefined.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CtRecord {
    pub schema: u32,
    pub id: String,
    pub label: String,
    pub op: OpId,
    pub system: String,
    /// What the driver made secret (the family's words).
    pub secrets: String,
    /// Runs of the operation, each on its own DRNG seed.
    pub runs: u32,
    pub status: CtStatus,
    /// Why the status is not `findings` or `none-found`, or what limits it.
    pub detail: Option<String>,
    /// Distinct findings, most frequent first.
    pub findings: Vec<CtFinding>,
    /// Bytes the driver marked secret and DRNG bytes poisoned, as its report gave them
    /// (a client message in memcheck's XML).
    pub secret_bytes: u64,
    pub random_bytes: u64,
    /// Bytes of secret keys marked defined again as the manifest says (`ct_public_sk`),
    /// and the manifest's ranges with their reasons.
    pub declassified_bytes: u64,
    pub declassified: Vec<String>,
    /// What memcheck reported inside the functions the manifest names as working on a
    /// value public by design (`ct_public_derived`): listed, never a finding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub public_derived: Vec<CtFinding>,
    /// Valgrind client requests found in the candidate's own code (they can hide a leak).
    pub client_requests: u32,
    pub command: Vec<String>,
    pub toolchain: ToolchainRecord,
    pub analysis: AnalysisLayer,
    pub build_key: String,
    pub library_sha256: String,
    /// Wall time of the memcheck run, in seconds (the tool's clock).
    pub wall_s: f64,
    /// The timing test, for the operations that get one (`ct::timing`).
    pub timing: Option<CtTiming>,
    pub harness_commit: String,
    pub started: String,
    pub finished: String,
}

/// A dudect-style timing test of one operation: two classes of secret input, interleaved
/// at random, each measurement timed from outside the operation's process. A low t is no
/// proof of constant time.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CtTiming {
    pub status: CtTimingStatus,
    /// Why it did not run, why it failed, or what limits it.
    pub detail: Option<String>,
    /// What the two classes are.
    pub classes: String,
    /// Measurements asked for, and taken.
    pub asked: u64,
    pub taken: u64,
    /// The largest |t| of dudect's tests (signed: negative when class 1 is the slower),
    /// which test gave it, and its measurements per class.
    pub t: f64,
    pub test: String,
    pub n: [u64; 2],
    /// Mean time per class over every kept measurement, in nanoseconds.
    pub mean_ns: [f64; 2],
    pub threshold: f64,
    /// Threads beyond its first, and other processes, that the operation's process ran.
    pub helpers: u32,
    /// What was timed, and with which clock.
    pub clock: String,
    pub timer_sha256: String,
    pub command: Vec<String>,
    pub wall_s: f64,
    /// The same tests by the class of the window before: on the gap after each window and
    /// on the next window, where work moved out of a window shows (absent in records made
    /// before the timer timed the gaps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub moved: Vec<MovedTest>,
    /// The timing test's time budget and the measurements it allowed (absent: a fixed count).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<Budget>,
}

/// A step's time budget for one operation and what it allowed (`measure::stats`'s
/// budget rules): `ct`'s measurements, or `bench`'s trials of `iterations` each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// The operation's budget, in seconds.
    pub seconds: f64,
    /// Where it came from (`--budget`, or a campaign's share of its own).
    pub source: String,
    /// What one unit (a measurement, a trial) cost by the tool's clock, outside the
    /// candidate's process, in ns; the count follows from it.
    pub unit_ns: f64,
    /// Measurements (ct) or trials (bench) the budget allowed, as run.
    pub allowed: u64,
    /// Iterations of each trial (bench; 0 for ct).
    pub iterations: u64,
    /// The fewest that give a verdict.
    pub floor: u64,
    /// `allowed` reached `floor`: otherwise the result is "not enough measurements".
    pub enough: bool,
}

/// One of dudect's tests on where work moved out of the window would be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MovedTest {
    pub what: String,
    pub t: f64,
    pub test: String,
    pub n: [u64; 2],
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CtTimingStatus {
    /// |t| above the threshold: the classes' timings differ.
    Differs,
    /// |t| at most the threshold on these measurements (no proof).
    NoneFound,
    /// |t| above the threshold by a margin the test's measurements cannot support
    /// (`measure::stats`'s margin rule): no verdict either way.
    Inconclusive,
    /// Not run (emulation, or the operator's choice); `detail` says why.
    NotRun,
    /// The operation, the driver or the timer failed; `detail` says how.
    Failed,
    /// The time budget allowed fewer measurements than a verdict needs, or the run
    /// outlasted it: no verdict either way; `detail` and `budget` say what it allowed.
    NotEnough,
}

impl CtTimingStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CtTimingStatus::Differs => "timing differs",
            CtTimingStatus::NoneFound => "no timing difference found",
            CtTimingStatus::Inconclusive => "timing inconclusive",
            CtTimingStatus::NotRun => "timing not run",
            CtTimingStatus::Failed => "timing failed",
            CtTimingStatus::NotEnough => "not enough measurements",
        }
    }
}

/// What a `ct` run of one operation found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CtStatus {
    /// Memcheck reported secret-dependent behaviour.
    Findings,
    /// Something was secret and memcheck reported nothing on the paths run (no proof).
    NoneFound,
    /// The driver marked nothing secret (no DRNG output reached the wrapper): no conclusion.
    NothingPoisoned,
    /// Nothing reported, but the candidate's code holds valgrind client requests, with
    /// which it can mark its secrets defined: no conclusion.
    Undetermined,
    /// The operation, the driver or valgrind failed, or its report could not be read.
    Failed,
}

impl CtStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CtStatus::Findings => "findings",
            CtStatus::NoneFound => "none found",
            CtStatus::NothingPoisoned => "nothing poisoned",
            CtStatus::Undetermined => "undetermined",
            CtStatus::Failed => "failed",
        }
    }
}

/// What memcheck saw depend on a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CtKind {
    /// A conditional jump or move (`UninitCondition`).
    Branch,
    /// A memory address (`UninitValue`).
    Index,
    /// A variable-latency instruction's operand (a patched valgrind only).
    Division,
    /// A system call's argument (`SyscallParam`).
    Syscall,
    Other,
}

impl CtKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CtKind::Branch => "secret-dependent branch",
            CtKind::Index => "secret-dependent memory index",
            CtKind::Division => "secret-dependent variable-time instruction",
            CtKind::Syscall => "secret passed to a system call",
            CtKind::Other => "other memcheck error",
        }
    }
}

/// One distinct finding: its kind, where it is (the innermost frame in the candidate's
/// source tree), its call stack and how often memcheck reported it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CtFinding {
    pub kind: CtKind,
    pub at: CtFrame,
    /// Innermost first.
    pub stack: Vec<CtFrame>,
    pub count: u64,
    /// Memcheck's own words (`Conditional jump or move depends on uninitialised value(s)`).
    pub what: String,
}

/// One stack frame: a function and, where debug information says, a file of the source
/// tree (relative to its root), `driver:<file>` for the harness's, or the object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct CtFrame {
    pub function: String,
    pub file: String,
    pub line: u32,
}

// ---- sanitizer builds (sanitize)

/// One instance built with AddressSanitizer and UndefinedBehaviorSanitizer, its KAT and
/// its family's checks run under them (`sanitize`). No finding is no proof: only the
/// paths run are seen.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SanitizeRecord {
    pub schema: u32,
    pub id: String,
    pub label: String,
    pub system: String,
    pub status: SanStatus,
    /// What limits the status, or why it is not `clean` or `findings`.
    pub detail: Option<String>,
    /// What the build added to every compiler command.
    pub flags: Vec<String>,
    /// The runtimes' options as the tool set them (`ASAN_OPTIONS=...`, `UBSAN_OPTIONS=...`).
    pub options: Vec<String>,
    /// The exit code the tool gave the runtimes: only a run that ends with it is read for
    /// a report.
    pub exit_code: i32,
    pub runs: Vec<SanRun>,
    /// The family's checks as they came out under the sanitizers.
    pub checks: Vec<Check>,
    /// Distinct findings, in the order the runs met them.
    pub findings: Vec<SanFinding>,
    /// What in the candidate's code can change what the sanitizers report (runtime
    /// hooks it defines or calls, `no_sanitize` in its sources): a run with none of
    /// these findings is then `undetermined`.
    pub hooks: Vec<String>,
    pub toolchain: ToolchainRecord,
    pub build_key: String,
    pub library_sha256: String,
    pub harness_commit: String,
    pub started: String,
    pub finished: String,
}

/// One program run of the sanitizer build.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SanRun {
    /// `kat`, `kat <part>`, or the check's name (`replay`).
    pub run: String,
    pub command: Vec<String>,
    pub outcome: Outcome,
    pub wall_s: f64,
    pub verdict: SanRunVerdict,
    pub detail: Option<String>,
    /// A KAT run's digests: the published one and the one of the text it printed.
    pub expected_sha256: Option<String>,
    pub actual_sha256: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SanRunVerdict {
    /// Exit 0, and for a KAT run the published digest.
    Clean,
    /// Ended with the sanitizers' exit code and a report that names a place.
    Report,
    /// Ended with the sanitizers' exit code but no report could be read: never clean.
    Unreadable,
    /// Exit 0 with another KAT digest than the published one.
    Mismatch,
    /// Ended otherwise (another exit status, a signal, the tool's clock, a cap).
    Failed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SanStatus {
    /// Every run exited 0, every KAT digest matched, every check held, no hook found.
    Clean,
    /// A sanitizer stopped a run with a report.
    Findings,
    /// No report, but a KAT digest or a check differs under the sanitizers.
    Mismatch,
    /// No report, and nothing differs, but the candidate's code holds hooks.
    Undetermined,
    /// A run ended otherwise, or with the sanitizers' exit code and no readable report.
    Failed,
}

impl SanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            SanStatus::Clean => "clean",
            SanStatus::Findings => "findings",
            SanStatus::Mismatch => "mismatch",
            SanStatus::Undetermined => "undetermined",
            SanStatus::Failed => "failed",
        }
    }
}

/// One distinct sanitizer report: which runtime, its bug type, where (the innermost frame
/// in the candidate's tree), the candidate's function the harness called, and the runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SanFinding {
    pub sanitizer: String,
    pub kind: String,
    pub what: String,
    pub at: CtFrame,
    pub entry: Option<String>,
    pub runs: Vec<String>,
    /// Innermost first, bounded.
    pub stack: Vec<CtFrame>,
}
