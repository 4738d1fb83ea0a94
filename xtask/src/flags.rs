//! Command-line interface, declared in one place.

use camino::{Utf8Path, Utf8PathBuf};
use clap::{Args, Parser, Subcommand};

/// `--unsandboxed-host` in `-h` and `--help` (every command that takes it says the same).
macro_rules! unsandboxed_host_help {
    () => {
        "With --engine host: build and run the code of an archive or a --source-dir on this machine, as you, \
         with no container, no isolation and no pinned compilers"
    };
}
const UNSANDBOXED_HOST_HELP: &str = unsandboxed_host_help!();
const UNSANDBOXED_HOST_LONG: &str = concat!(
    unsandboxed_host_help!(),
    ".\n\nA submission's source is untrusted: without this flag, --engine host builds only the pinned crates \
     (`[source] kind = \"crate\"`: pqclean-ml-kem, baseline-hash, ...) and refuses any other source before \
     anything runs. Records say `toolchain: host (unpinned, unsandboxed)`."
);

/// Reproducible build-and-verify harness for post-quantum candidates (KEMs, signatures,
/// hash functions, key exchanges).
///
/// Every submission is compiled with a pinned gcc/cmake toolchain inside a
/// Debian or Ubuntu container (no network, read-only sources, bounded memory,
/// pids and time), its known-answer tests are regenerated and their SHA-256 is
/// checked against kat/<id>/kat.sha256.
///
/// Exit status: 0 done and clean; 1 a candidate verdict or check that did not hold
/// (MISMATCH, BUILDFAIL, a failed timing, evidence not matching its index, figures not
/// comparable); 2 a wrong command line or value (nothing run); 3 a failure of the tool,
/// the engine or the machine (no candidate status recorded for it); 130 interrupted.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version, propagate_version = true)]
pub struct Xtask {
    #[command(flatten)]
    pub output: Output,
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// How much the commands say, and in which form.
#[derive(Debug, Args, Clone, Copy)]
pub struct Output {
    /// Print one JSON summary on stdout at the end (every other line goes to stderr).
    #[arg(long, global = true)]
    pub json: bool,
    /// Say only warnings and errors.
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more: commands run, cache decisions.
    #[arg(short, long, global = true)]
    pub verbose: bool,
}

impl Output {
    pub fn options(self) -> crate::ui::Options {
        crate::ui::Options { quiet: self.quiet, verbose: self.verbose, json: self.json }
    }
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// List submissions, their instances, which archives are here, and the pinned toolchains.
    List(List),
    /// Build or check a pinned toolchain image (mmdebstrap + engine import, no registry).
    #[command(subcommand)]
    Image(ImageCmd),
    /// Build every instance of the submissions, generate their KATs and check the digests.
    Verify(Verify),
    /// Time the family's operations of every instance (KEM keygen/enc/dec, signature keygen/sign/verify, hash
    /// message sizes, key-exchange passes): cycles or ticks, time, ops/s, memory, sizes.
    Bench(Bench),
    /// Share of each operation in the ICCS hash functions, DRNG and own symmetric primitives.
    ///
    /// Builds a variant of each instance library with link-time wrappers (-Wl,--wrap=) around the manifest's [profile] symbols (ICCS
    /// pseudohash/pseudoXOF/sm3hash and get_random_number, or a submission's own
    /// SHAKE/SHA-2/AES and randombytes), times every operation on it and on the reference
    /// build with the bench plan, and writes each group's share of the ticks, the calls per
    /// operation, the wrappers' overhead, and a survey verdict (ICCS-only, bypass, mixed,
    /// instance-dependent) derived from the library's constants and the measured calls,
    /// under <out>/<system>/profile/<id>/. Takes every option of `bench`.
    Profile(Profile),
    /// Constant-time check: secret-dependent branches and memory indices, found by valgrind's memcheck.
    ///
    /// Builds a variant of each instance with debug information (-g; otherwise the guide
    /// build) in the toolchain's analysis image (the toolchain image plus the valgrind
    /// pinned in toolchains/analysis/<toolchain>.toml, made on first use), and runs each
    /// secret-handling operation of the family under memcheck with its secrets marked
    /// undefined: KEM keygen and enc the DRNG output, dec the secret key; signature keygen
    /// the DRNG output, sign the secret key and the DRNG output; key exchange init the DRNG
    /// output, passes and derive both sides' secret keys and states (passes: and the DRNG
    /// output). Public outputs are declassified when the call returns. Every conditional jump, memory address or
    /// system call argument computed from a secret is a finding, with its file:line in the
    /// candidate's tree and its call stack, in <out>/<system>/ct/<id>/<label>__<op>.json.
    /// No finding is no proof: only the paths run are seen, and stock memcheck sees no
    /// division.
    ///
    /// Then a dudect-style timing test, for a KEM's dec always and for every operation
    /// with a finding (not under emulation): the driver, a child of the harness's timer
    /// (process 1 of its container), runs the operation --measurements times, each on a
    /// DRNG seed that is either always the same (class 0) or random (class 1), the classes
    /// interleaved at random; the timer clocks the operation alone from outside its
    /// process. Welch's t, the largest |t| over dudect's tests, above 4.5: the timings
    /// differ. A low t is no proof of constant time.
    ///
    /// Exit 1 when any operation has findings, a timing difference, or failed.
    Ct(Ct),
    /// Build each instance with AddressSanitizer and UndefinedBehaviorSanitizer and run
    /// its KAT and its family's checks under them.
    ///
    /// Every compiler command of the instance's plan gets `-fsanitize=address,undefined
    /// -fno-omit-frame-pointer -g`, in the toolchain's own image (gcc brings the runtimes).
    /// The KAT program runs with its digest checked against kat.sha256, then the family's
    /// checks on inputs drawn at run time (a KEM's replay and tampered ciphertexts, a
    /// signature's verify contract). The runtimes halt at their first report and exit
    /// with the tool's own code (86); only such a run is read, and its report becomes a
    /// finding with its file:line in the candidate's tree, the runtime's bug type and the
    /// candidate's function the harness called. A run that exits 86 with no readable
    /// report is a failure, never clean; text the candidate prints cannot make a run
    /// clean. Sanitizer hooks the candidate's code defines or calls, and `no_sanitize` in
    /// the sources the build read, make a run without findings `undetermined`. One
    /// record per instance in <out>/<system>/sanitize/<id>/<label>.json.
    ///
    /// Not under qemu-user: an --arch this machine does not run natively is refused
    /// (exit 2), as is --engine host. Leak detection is off (it needs ptrace).
    ///
    /// Exit 1 when any instance has findings, differs under the sanitizers, has hooks, or
    /// failed.
    Sanitize(Sanitize),
    /// Image, verify, bench and profile for a set of submissions on one system, resumable.
    Campaign(Campaign),
    /// Render a submission's evidence as a page with the structure of the seed pages.
    Report(Report),
    /// A static HTML site (pages, SVG charts, cross-system links) from an evidence set.
    ///
    /// An index of systems and submissions, one HTML page per (system, submission) with the seed pages' breadcrumb, sections and
    /// links to the other systems, SVG charts beside their tables, and the Markdown
    /// pages. No scripts or network assets; the same evidence renders the same bytes.
    Site(Site),
    /// Compare the same operations in two evidence sets or two systems, with spreads.
    ///
    /// Two evidence sets, or two systems of one set (DIR:SYSTEM): B/A ratio per (instance, operation) with both spreads. Refuses when
    /// compiler, build commands, image, library digest, CPU model or counter differ, or
    /// one side is emulated, and lists the differences; --allow-differences compares
    /// anyway and prints them on the page.
    Compare(Compare),
    /// Index evidence sets and check them against their index.
    #[command(subcommand)]
    Evidence(EvidenceCmd),
    /// Merge campaign shards into one evidence set with a fresh index.
    Merge(Merge),
    /// Print the environment manifest of this host (processor, clock, memory, OS, compilers)
    /// and the host gate's checks.
    Env(Env),
    /// Check every prerequisite of the container path (engine, runtime, init, mmdebstrap,
    /// keyrings, emulation, cgroups, disk) and print the command that fixes each missing one.
    Doctor(Doctor),
    /// Draft a manifest and kat.sha256 for an NGCC archive that has none, then verify it.
    ///
    /// Family from the API header, instance folders, labels, sources (the reference
    /// harness's default rule), include folders, the KAT files under Test_Vectors* and
    /// their digests; every guess is commented in the draft.
    Onboard(Onboard),
}

#[derive(Debug, Args)]
pub struct Onboard {
    /// The candidate's archive (zip, tar or tar.gz), as published; nothing in it is run.
    pub archive: Utf8PathBuf,
    /// Submission id of the draft (default: from the archive's file name).
    #[arg(long)]
    pub id: Option<String>,
    /// Where the draft goes: <dir>/<id>.toml and <dir>/<id>/kat.sha256.
    #[arg(long, default_value = "onboard")]
    pub dir: Utf8PathBuf,
    /// Overwrite an earlier draft of the same id.
    #[arg(long)]
    pub force: bool,
    /// Write the draft only; print the verify command.
    #[arg(long)]
    pub no_verify: bool,
    #[command(flatten)]
    pub target: Target,
    /// Evidence directory of the verify run.
    #[arg(long, default_value = "out")]
    pub out: Utf8PathBuf,
    /// The ICCS API package (API_PKC.zip), for a draft that takes its official drng.c or
    /// auxfunc.c (default: archives/API_PKC.zip).
    #[arg(long, value_name = "PATH")]
    pub iccs_api: Option<Utf8PathBuf>,
}

#[derive(Debug, Args)]
pub struct Doctor {
    #[command(flatten)]
    pub on: OnSystem,
}

/// Which system, toolchain and engine a command looks at.
#[derive(Debug, Args)]
pub struct OnSystem {
    #[command(flatten)]
    pub target: Target,
    /// Toolchain of the image (default: the system profile's).
    #[arg(long)]
    pub toolchain: Option<String>,
    /// System profile (systems/<name>.toml): decides toolchain and architecture.
    #[arg(long, default_value = "local", value_parser = plain_name)]
    pub system: String,
}

#[derive(Debug, Args)]
pub struct List {
    /// Where to look for the candidates' archives (default: archives/ of the checkout,
    /// where verify looks). Each is looked for under its pinned file name and checked by
    /// its size only: its SHA-256 is checked when verify or campaign takes it.
    #[arg(long = "archives", value_name = "DIR")]
    pub archive_dir: Option<Utf8PathBuf>,
    /// Print the campaign workflow's GitHub Actions matrices (JSON, with --json) instead:
    /// one shard per candidate whose archive --sums lists, per architecture, each slow
    /// instance in a shard of its own.
    #[arg(long, requires = "sums")]
    pub matrix: bool,
    /// A `sha256sum` listing of the archives location (its SHA256SUMS): a candidate runs
    /// when its pinned SHA-256 is there, under any file name.
    #[arg(long, value_name = "FILE", requires = "matrix")]
    pub sums: Option<Utf8PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum ImageCmd {
    /// Build the image of a toolchain spec (reused when the spec is unchanged).
    Build(ImageBuild),
    /// Run the compilers inside the image and fail when a version differs from the pin.
    Check(ImageCheck),
}

#[derive(Debug, Args)]
pub struct ImageBuild {
    /// Toolchain name (a file under toolchains/, without .toml).
    pub toolchain: String,
    #[command(flatten)]
    pub target: Target,
    /// Package archive to bootstrap from (default: mmdebstrap's own default for the suite).
    #[arg(long)]
    pub mirror: Option<String>,
    /// Rebuild even when an image with the spec's tag exists.
    #[arg(long)]
    pub force: bool,
    /// Also make the toolchain's analysis image (`ct`'s valgrind), as `ct` would.
    #[arg(long)]
    pub analysis: bool,
}

#[derive(Debug, Args)]
pub struct ImageCheck {
    /// Toolchain name (a file under toolchains/, without .toml).
    pub toolchain: String,
    #[command(flatten)]
    pub target: Target,
}

/// What a verify or bench run works on, and where its evidence goes.
#[derive(Debug, Args, Clone)]
pub struct Inputs {
    /// Submission ids (files under submissions/, without .toml), or paths to manifest
    /// files; default: the system profile's campaign set (local: pqclean-ml-kem; `x86_1` and
    /// `arm_1`: kem-03 kem-04 kem-07).
    pub ids: Vec<String>,
    /// A submission's archive, `[ID=]PATH|URL` (repeatable; the plain form when one
    /// submission is selected), checked against the SHA-256 its manifest pins before
    /// anything is extracted; default: archives/<file name>.
    #[arg(long = "archive", value_name = "[ID=]PATH|URL", value_parser = given)]
    pub archive: Vec<Given>,
    /// Use an already-extracted tree instead, `[ID=]DIR` (repeatable); records say
    /// `source: unpinned directory`.
    #[arg(long = "source-dir", value_name = "[ID=]DIR", value_parser = given)]
    pub source_dir: Vec<Given>,
    #[command(flatten)]
    pub target: Target,
    #[arg(long, help = UNSANDBOXED_HOST_HELP, long_help = UNSANDBOXED_HOST_LONG)]
    pub unsandboxed_host: bool,
    /// Toolchain to build with (default: the system profile's).
    #[arg(long)]
    pub toolchain: Option<String>,
    /// Evidence directory (layout: <out>/<system>/{kat,records,report}/<id>/).
    #[arg(long, default_value_t = defaults().out)]
    pub out: Utf8PathBuf,
    /// System profile (systems/<name>.toml): toolchain, architecture, CPU and trial
    /// target; names the evidence folder and is recorded in every record.
    #[arg(long, default_value_t = defaults().system, value_parser = plain_name)]
    pub system: String,
    /// Only these instance labels (repeatable); default: every instance.
    #[arg(long = "instance")]
    pub instances: Vec<String>,
    /// Rebuild even when a build with the same inputs exists.
    #[arg(long)]
    pub rebuild: bool,
    /// Wall-time limit of every build step, in seconds (the tool's own clock).
    #[arg(long, default_value_t = defaults().build_timeout, value_name = "SECS")]
    pub build_timeout: u64,
    /// Memory limit of every sandboxed command (engine syntax, e.g. 512m, 4g).
    #[arg(long, default_value_t = defaults().memory, value_parser = memory)]
    pub memory: String,
    /// Most output kept of one sandboxed command, in MiB; more gives OUTPUTLIMIT. Also
    /// the largest file a build may write. Default: 256, or an instance's
    /// `output_cap_mib` for its KAT run.
    #[arg(long, value_name = "MIB")]
    pub output_cap_mib: Option<u64>,
    /// Most a build may write into its folder, in MiB (and at most 100000 files).
    #[arg(long, default_value_t = defaults().build_disk_mib, value_name = "MIB")]
    pub build_disk_mib: u64,
    /// Most bytes an archive may expand to, in MiB. Default: 4096, or the manifest's
    /// `[source.limits] max_extract_mib`.
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..))]
    pub max_extract_mib: Option<u64>,
    /// Most entries an archive may hold. Default: 100000, or the manifest's `max_entries`.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_entries: Option<u64>,
    /// Most expanded bytes per archive byte (a zip bomb expands far more). Default: 200,
    /// or the manifest's `max_ratio`.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_ratio: Option<u64>,
}

#[derive(Debug, Args)]
pub struct Verify {
    #[command(flatten)]
    pub inputs: Inputs,
    /// Alternative KAT manifest instead of kat/<id>/kat.sha256.
    #[arg(long)]
    pub kat_manifest: Option<Utf8PathBuf>,
    /// Wall-time limit of one KAT run, in seconds (the tool's own clock). Default: 600,
    /// or an instance's `timeout` from its manifest.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Keep the current results of instances that already have one (same build, same
    /// KAT manifest, same toolchain and source) and run only the others.
    #[arg(long)]
    pub resume: bool,
    /// Instances built and KAT-checked at a time (default: the cores not kept for
    /// timing, at least 1). Timing never runs in parallel.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..256))]
    pub jobs: Option<u32>,
    /// Check only these KAT files of a family that writes several (hash: 2_12, 2_23,
    /// 2_33, Loop; comma-separated or repeated). Default: every file. Files left out are
    /// recorded as not checked, and their earlier results of the same build are kept.
    #[arg(long, value_delimiter = ',', value_name = "PART")]
    pub kat_files: Vec<String>,
}

#[derive(Debug, Args)]
pub struct Bench {
    #[command(flatten)]
    pub inputs: Inputs,
    /// Operations to time (repeatable; default: the family's, e.g. keygen, enc, dec for a
    /// KEM, keygen, sign, verify, sign_msgs for a signature, hash_32 … hash_65536 for a hash,
    /// exchange, init_a, init_b, pass1 … pass<N>, derive_a, derive_b for a key exchange, whose
    /// passes beyond an instance's own are skipped; `nop` times the harness alone).
    #[arg(long = "op")]
    pub ops: Vec<String>,
    /// Trials per operation, each in its own process (reference: 5).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: Option<u32>,
    /// Target duration of one trial in seconds (default: the system profile's; 1.0 on
    /// `x86_1`, 0.5 on `arm_1`).
    #[arg(long)]
    pub trial_target: Option<f64>,
    /// Fixed iterations per trial instead of calibrating (the same count on every system).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub iterations: Option<u64>,
    /// Pin the measurement to this CPU (default: the system profile's).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Time even though the host gate failed; the failed checks go into every record.
    #[arg(long)]
    pub allow_unfixed_host: bool,
    /// CI mode: 3 short trials; same record format, marked quick.
    #[arg(long)]
    pub quick: bool,
    /// Do not time the family's same-run baselines (hash: SHA-256, SHA-512, SHA3-256 and
    /// SHA3-512 of the pinned PQClean tree, `submissions/baseline-hash.toml`), which a
    /// hash page compares with.
    #[arg(long)]
    pub no_baselines: bool,
    /// Keep the records on disk that are current (same build, drivers, toolchain,
    /// harness commit, plan and host, and as the evidence index has them) and time only
    /// the missing (instance, operation) pairs.
    #[arg(long)]
    pub resume: bool,
}

#[derive(Debug, Args)]
pub struct Profile {
    #[command(flatten)]
    pub bench: Bench,
}

#[derive(Debug, Args)]
pub struct Ct {
    #[command(flatten)]
    pub inputs: Inputs,
    /// Only these operations (repeatable; default: every secret-handling one).
    #[arg(long = "op")]
    pub ops: Vec<String>,
    /// Runs of each operation, each on its own DRNG seed (more runs reach more paths).
    #[arg(long, default_value_t = crate::ct::CtOptions::default().runs, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// Wall-time limit of one operation's memcheck run, and of its timing test, in seconds.
    #[arg(long, default_value_t = crate::ct::CtOptions::default().timeout_s, value_name = "SECS")]
    pub timeout: u64,
    /// Measurements of the timing test (both classes), for decapsulation and for every
    /// operation with a finding.
    #[arg(long, default_value_t = crate::ct::CtOptions::default().measurements, value_name = "N",
          value_parser = clap::value_parser!(u64).range(crate::ct::timing::MIN_MEASUREMENTS..=crate::ct::timing::MAX_MEASUREMENTS))]
    pub measurements: u64,
    /// No timing test: memcheck only.
    #[arg(long)]
    pub no_timing: bool,
}

#[derive(Debug, Args)]
pub struct Sanitize {
    #[command(flatten)]
    pub inputs: Inputs,
    /// Wall-time limit of one run, in seconds (default: the instance's KAT limit × 4).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
}

impl From<Sanitize> for crate::sanitize::Sanitize {
    fn from(c: Sanitize) -> Self {
        crate::sanitize::Sanitize { inputs: c.inputs.into(), timeout: c.timeout }
    }
}

#[derive(Debug, Args)]
pub struct Campaign {
    /// Submission ids; default: the system profile's campaign set (local: pqclean-ml-kem).
    pub ids: Vec<String>,
    #[command(flatten)]
    pub target: Target,
    #[arg(long, help = UNSANDBOXED_HOST_HELP, long_help = UNSANDBOXED_HOST_LONG)]
    pub unsandboxed_host: bool,
    /// System profile (systems/<name>.toml).
    #[arg(long, default_value = "local", value_parser = plain_name)]
    pub system: String,
    /// Evidence directory.
    #[arg(long, default_value = "out")]
    pub out: Utf8PathBuf,
    /// Skip steps whose evidence exists and passes the index check.
    #[arg(long)]
    pub resume: bool,
    /// Quick timing (CI): same record format, marked quick; ct's timing test takes its
    /// fewest measurements.
    #[arg(long)]
    pub quick: bool,
    /// Time even though the host gate failed (recorded in every record).
    #[arg(long)]
    pub allow_unfixed_host: bool,
    /// Verify only; no timing (and no profile).
    #[arg(long)]
    pub no_bench: bool,
    /// Pin every measurement to this CPU (default: the system profile's).
    #[arg(long)]
    pub cpu: Option<usize>,
    /// Trials per operation, each in its own process (reference: 5).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub trials: Option<u32>,
    /// Wall-time limit of one KAT run, in seconds. Default: 600, or an instance's
    /// `timeout` from its manifest.
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Memory limit of every sandboxed command (engine syntax, e.g. 512m, 4g).
    #[arg(long, default_value = "4g", value_parser = memory)]
    pub memory: String,
    /// No symmetric-primitive profile (by default it follows bench for every submission
    /// whose manifest has a [profile] section).
    #[arg(long)]
    pub no_profile: bool,
    /// No constant-time check (by default it follows verify for every submission whose
    /// family has secret inputs and whose manifest has a [bench] adapter; `cargo xtask ct`).
    #[arg(long)]
    pub no_ct: bool,
    /// No sanitizer builds (by default they follow verify for every submission on the cc
    /// recipe, natively only; `cargo xtask sanitize`).
    #[arg(long)]
    pub no_sanitize: bool,
    /// A submission's archive, `[ID=]PATH|URL`, as verify's --archive (repeatable).
    #[arg(long = "archive", value_name = "[ID=]PATH|URL", value_parser = given)]
    pub archives: Vec<Given>,
    /// An extracted tree, `[ID=]DIR`, as verify's --source-dir (repeatable).
    #[arg(long = "source-dir", value_name = "[ID=]DIR", value_parser = given)]
    pub source_dirs: Vec<Given>,
    /// A folder of downloaded archives: every candidate whose pinned archive is in it
    /// (matched by SHA-256, any file name) runs; the missing ones are listed with file
    /// name, size, SHA-256 and page. With ids, only those are looked for.
    #[arg(long = "archives", value_name = "DIR")]
    pub archive_dir: Option<Utf8PathBuf>,
    /// Verify and time the instances their manifests mark `slow` after every other one.
    #[arg(long)]
    pub defer: bool,
    /// Steps run at a time, over all submissions, and instances verified at a time in
    /// each verify step (default: the cores not kept for timing); timing steps (bench,
    /// profile, ct) stay one at a time on the pinned core.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..256))]
    pub jobs: Option<u32>,
    /// Print the steps each selected submission would run, those skipped and why, and
    /// every missing archive; build nothing, call no engine. Exit 2 when one is missing.
    /// Also prints an estimate of the wall time for --jobs and --estimate-timing-cores.
    #[arg(long)]
    pub dry_run: bool,
    /// Timing processes at a time that --dry-run's estimate assumes (default 1). The
    /// estimate only: the campaign itself times one process at a time.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..256))]
    pub estimate_timing_cores: Option<u32>,
}

/// The defaults of a run's inputs, written once in the plain type.
fn defaults() -> crate::compile::options::Inputs {
    crate::compile::options::Inputs::default()
}

/// A system name (it names a folder): the rule of [`crate::project::plain_name`].
fn plain_name(s: &str) -> Result<String, String> {
    crate::project::plain_name(s).map(|()| s.to_owned()).map_err(|why| format!("{s:?} {why}"))
}

fn given(s: &str) -> Result<Given, String> {
    // `ID=` only when what precedes `=` is a plain id: a URL's query may hold `=` too.
    let (id, path) = match s.split_once('=') {
        Some((id, path)) if crate::project::plain_name(id).is_ok() && !id.contains(':') => (Some(id), path),
        _ => (None, s),
    };
    if path.is_empty() {
        return Err(format!("expected [ID=]PATH, e.g. kem-07=archives/BRQC.zip, not {s:?}"));
    }
    Ok(Given { id: id.map(str::to_owned), path: path.into() })
}

/// An engine memory size: digits and an optional unit b, k, m or g (at least 6m, the
/// least both engines accept).
fn memory(s: &str) -> Result<String, String> {
    let t = s.to_ascii_lowercase();
    let (digits, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let scale: u64 = match unit {
        "" | "b" => 1,
        "k" | "kb" => 1 << 10,
        "m" | "mb" => 1 << 20,
        "g" | "gb" => 1 << 30,
        _ => return Err(format!("{s:?} is not a size: write digits and a unit b, k, m or g (e.g. 512m, 4g)")),
    };
    let bytes = digits.parse::<u64>().ok().and_then(|n| n.checked_mul(scale));
    match bytes {
        Some(b) if b >= 6 << 20 => Ok(t),
        Some(_) => Err(format!("{s:?} is below 6m, the least memory an engine accepts")),
        None => Err(format!("{s:?} is not a size: write digits and a unit b, k, m or g (e.g. 512m, 4g)")),
    }
}

#[derive(Debug, Args)]
pub struct Report {
    /// Submission ids.
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// Evidence directory; pages go to <out>/<system>/report/<id>.md.
    #[arg(long, default_value = "out")]
    pub out: Utf8PathBuf,
    /// System whose evidence is rendered.
    #[arg(long, default_value = "local", value_parser = plain_name)]
    pub system: String,
    /// The architecture whose evidence is rendered, when not the system profile's
    /// (its evidence lies in `<system>-<arch>`).
    #[arg(long, value_enum)]
    pub arch: Option<Arch>,
}

#[derive(Debug, Args)]
pub struct Compare {
    /// Evidence directory A, or A:SYSTEM when it holds several systems.
    pub a: Utf8PathBuf,
    /// Evidence directory B, or B:SYSTEM.
    pub b: Utf8PathBuf,
    /// Compare although the figures differ in more than the machine (images count as
    /// the same when their installed packages and versions are).
    #[arg(long)]
    pub allow_differences: bool,
    /// Also write the comparison page there (outside both evidence sets): compare.md,
    /// and compare.html with each row's B/A ratio and its range over the trials.
    #[arg(long, value_name = "DIR")]
    pub out: Option<Utf8PathBuf>,
}

#[derive(Debug, Args)]
pub struct Site {
    /// Evidence directory (one folder per system).
    #[arg(default_value = "out")]
    pub dir: Utf8PathBuf,
    /// Where the site goes: outside the evidence set, which it does not change (a folder
    /// inside it, or holding it, is refused before anything is written). The default
    /// `site` is ignored by git.
    #[arg(long, default_value = "site")]
    pub out: Utf8PathBuf,
    /// A manifest given by path (`onboard/toykem.toml`), as `report` takes one: its
    /// evidence is shown under that manifest's id. Repeatable.
    #[arg(long = "manifest", value_name = "PATH")]
    pub manifests: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum EvidenceCmd {
    /// Name every changed, missing or extra file; exit non-zero unless all match.
    Check(EvidenceCheck),
    /// Write a fresh index (verify, bench and merge do this themselves).
    Index(EvidenceIndex),
}

#[derive(Debug, Args)]
pub struct EvidenceCheck {
    /// The evidence root (the --out of a run).
    #[arg(default_value = "out")]
    pub dir: Utf8PathBuf,
}

#[derive(Debug, Args)]
pub struct EvidenceIndex {
    /// The evidence root (the --out of a run).
    #[arg(default_value = "out")]
    pub dir: Utf8PathBuf,
}

#[derive(Debug, Args)]
pub struct Merge {
    /// Shard evidence roots; each must pass its own index check.
    #[arg(required = true)]
    pub shards: Vec<Utf8PathBuf>,
    /// The merged evidence root (must be empty or absent).
    #[arg(long)]
    pub out: Utf8PathBuf,
}

#[derive(Debug, Args)]
pub struct Env {
    /// The image supplies the compiler and build tool lines.
    #[command(flatten)]
    pub on: OnSystem,
    /// The CPU the measurement would be pinned to.
    #[arg(long)]
    pub cpu: Option<usize>,
}

/// Where commands run: which engine, which architecture.
#[derive(Debug, Args, Clone)]
pub struct Target {
    /// Container engine; `auto` takes podman, else docker, and never the host: without a
    /// working engine it stops (exit 3) and says what `cargo xtask doctor` finds missing.
    /// `host` builds with the host's unpinned compilers, unsandboxed (an archive or a
    /// --source-dir also needs --unsandboxed-host; onboard refuses it).
    #[arg(long, value_enum, default_value_t = EngineChoice::default())]
    pub engine: EngineChoice,
    /// Target architecture (default: the system profile's, else the host's).
    #[arg(long, value_enum)]
    pub arch: Option<Arch>,
}

pub use crate::compile::options::Given;
pub use crate::evidence::domain::{Arch, EngineChoice};

/// Make a relative path absolute against the caller's working directory.
fn absolute(p: &mut Utf8PathBuf, cwd: &Utf8Path) {
    if p.is_relative() {
        *p = cwd.join(&*p);
    }
}

fn absolute_given(given: &mut [Given], cwd: &Utf8Path) {
    given.iter_mut().filter(|g| !g.is_url()).for_each(|g| absolute(&mut g.path, cwd));
}

fn absolute_ids(ids: &mut [String], cwd: &Utf8Path) {
    for id in ids.iter_mut().filter(|i| i.ends_with(".toml") && Utf8Path::new(i.as_str()).is_relative()) {
        *id = cwd.join(id.as_str()).to_string();
    }
}

impl Inputs {
    fn resolve(&mut self, cwd: &Utf8Path) {
        absolute_ids(&mut self.ids, cwd);
        absolute_given(&mut self.archive, cwd);
        absolute_given(&mut self.source_dir, cwd);
        absolute(&mut self.out, cwd);
    }
}

impl Cmd {
    /// The evidence folder a command writes, when it writes one.
    pub fn out_dir(&self) -> Option<&Utf8Path> {
        match self {
            Cmd::Verify(v) => Some(&v.inputs.out),
            Cmd::Bench(b) => Some(&b.inputs.out),
            Cmd::Profile(p) => Some(&p.bench.inputs.out),
            Cmd::Ct(c) => Some(&c.inputs.out),
            Cmd::Sanitize(c) => Some(&c.inputs.out),
            Cmd::Campaign(c) => Some(&c.out),
            Cmd::Merge(m) => Some(&m.out),
            _ => None,
        }
    }
}

impl Xtask {
    /// Resolve every path argument against the caller's working directory, once, so
    /// that the commands can work from the project root.
    pub fn resolve_paths(&mut self, cwd: &Utf8Path) {
        match &mut self.cmd {
            Cmd::Verify(v) => {
                v.inputs.resolve(cwd);
                if let Some(k) = v.kat_manifest.as_mut() {
                    absolute(k, cwd);
                }
            }
            Cmd::Bench(b) => b.inputs.resolve(cwd),
            Cmd::Profile(p) => p.bench.inputs.resolve(cwd),
            Cmd::Ct(c) => c.inputs.resolve(cwd),
            Cmd::Sanitize(c) => c.inputs.resolve(cwd),
            Cmd::Campaign(c) => {
                absolute_ids(&mut c.ids, cwd);
                absolute(&mut c.out, cwd);
                absolute_given(&mut c.archives, cwd);
                absolute_given(&mut c.source_dirs, cwd);
                if let Some(d) = c.archive_dir.as_mut() {
                    absolute(d, cwd);
                }
            }
            Cmd::List(l) => {
                if let Some(d) = l.archive_dir.as_mut() {
                    absolute(d, cwd);
                }
                if let Some(f) = l.sums.as_mut() {
                    absolute(f, cwd);
                }
            }
            Cmd::Report(r) => {
                absolute_ids(&mut r.ids, cwd);
                absolute(&mut r.out, cwd);
            }
            Cmd::Compare(c) => {
                absolute(&mut c.a, cwd);
                absolute(&mut c.b, cwd);
                if let Some(o) = c.out.as_mut() {
                    absolute(o, cwd);
                }
            }
            Cmd::Site(s) => {
                absolute_ids(&mut s.manifests, cwd);
                absolute(&mut s.dir, cwd);
                absolute(&mut s.out, cwd);
            }
            Cmd::Evidence(EvidenceCmd::Check(e)) => absolute(&mut e.dir, cwd),
            Cmd::Evidence(EvidenceCmd::Index(e)) => absolute(&mut e.dir, cwd),
            Cmd::Merge(m) => {
                m.shards.iter_mut().for_each(|s| absolute(s, cwd));
                absolute(&mut m.out, cwd);
            }
            Cmd::Onboard(o) => [&mut o.archive, &mut o.dir, &mut o.out]
                .into_iter()
                .chain(o.iccs_api.as_mut())
                .for_each(|p| absolute(p, cwd)),
            Cmd::Image(_) | Cmd::Env(_) | Cmd::Doctor(_) => {}
        }
    }
}

// ---- The edge: each command line into its command's plain options ----

impl From<Target> for crate::container::engine::Target {
    fn from(t: Target) -> Self {
        crate::container::engine::Target { engine: t.engine, arch: t.arch }
    }
}

impl From<Inputs> for crate::compile::options::Inputs {
    fn from(i: Inputs) -> Self {
        crate::compile::options::Inputs {
            ids: i.ids,
            archive: i.archive,
            source_dir: i.source_dir,
            target: i.target.into(),
            unsandboxed_host: i.unsandboxed_host,
            toolchain: i.toolchain,
            out: i.out,
            system: i.system,
            instances: i.instances,
            rebuild: i.rebuild,
            build_timeout: i.build_timeout,
            memory: i.memory,
            output_cap_mib: i.output_cap_mib,
            build_disk_mib: i.build_disk_mib,
            max_extract_mib: i.max_extract_mib,
            max_entries: i.max_entries,
            max_ratio: i.max_ratio,
        }
    }
}

impl From<ImageBuild> for crate::container::image::ImageBuild {
    fn from(c: ImageBuild) -> Self {
        crate::container::image::ImageBuild {
            toolchain: c.toolchain,
            target: c.target.into(),
            mirror: c.mirror,
            force: c.force,
            analysis: c.analysis,
        }
    }
}

impl From<ImageCheck> for crate::container::image::ImageCheck {
    fn from(c: ImageCheck) -> Self {
        crate::container::image::ImageCheck { toolchain: c.toolchain, target: c.target.into() }
    }
}

impl From<Verify> for crate::kat::verify::Verify {
    fn from(c: Verify) -> Self {
        crate::kat::verify::Verify {
            inputs: c.inputs.into(),
            kat_manifest: c.kat_manifest,
            timeout: c.timeout,
            resume: c.resume,
            jobs: c.jobs,
            kat_files: c.kat_files,
        }
    }
}

impl From<Bench> for crate::measure::bench::Bench {
    fn from(c: Bench) -> Self {
        crate::measure::bench::Bench {
            inputs: c.inputs.into(),
            ops: c.ops,
            trials: c.trials,
            trial_target: c.trial_target,
            iterations: c.iterations,
            cpu: c.cpu,
            allow_unfixed_host: c.allow_unfixed_host,
            quick: c.quick,
            no_baselines: c.no_baselines,
            resume: c.resume,
        }
    }
}

impl From<Profile> for crate::measure::profile::Profile {
    fn from(c: Profile) -> Self {
        crate::measure::profile::Profile { bench: c.bench.into() }
    }
}

impl From<OnSystem> for crate::container::systems::OnSystem {
    fn from(c: OnSystem) -> Self {
        crate::container::systems::OnSystem { target: c.target.into(), toolchain: c.toolchain, system: c.system }
    }
}

impl From<Env> for crate::measure::env::Env {
    fn from(c: Env) -> Self {
        crate::measure::env::Env { on: c.on.into(), cpu: c.cpu }
    }
}

impl From<Doctor> for crate::doctor::Doctor {
    fn from(c: Doctor) -> Self {
        crate::doctor::Doctor { on: c.on.into() }
    }
}

impl From<EvidenceCheck> for crate::evidence::command::EvidenceCheck {
    fn from(c: EvidenceCheck) -> Self {
        crate::evidence::command::EvidenceCheck { dir: c.dir }
    }
}

impl From<EvidenceIndex> for crate::evidence::command::EvidenceIndex {
    fn from(c: EvidenceIndex) -> Self {
        crate::evidence::command::EvidenceIndex { dir: c.dir }
    }
}

impl From<Compare> for crate::pages::compare::Compare {
    fn from(c: Compare) -> Self {
        crate::pages::compare::Compare { a: c.a, b: c.b, allow_differences: c.allow_differences, out: c.out }
    }
}

impl From<Report> for crate::pages::report::Report {
    fn from(c: Report) -> Self {
        crate::pages::report::Report { ids: c.ids, out: c.out, system: c.system, arch: c.arch }
    }
}

impl From<Site> for crate::pages::site::Site {
    fn from(c: Site) -> Self {
        crate::pages::site::Site { dir: c.dir, out: c.out, manifests: c.manifests }
    }
}

impl From<List> for crate::list::List {
    fn from(c: List) -> Self {
        crate::list::List { archive_dir: c.archive_dir, matrix: c.sums.filter(|_| c.matrix) }
    }
}

impl From<Merge> for crate::merge::Merge {
    fn from(c: Merge) -> Self {
        crate::merge::Merge { shards: c.shards, out: c.out }
    }
}

impl From<Onboard> for crate::onboard::Onboard {
    fn from(c: Onboard) -> Self {
        crate::onboard::Onboard {
            archive: c.archive,
            id: c.id,
            dir: c.dir,
            force: c.force,
            no_verify: c.no_verify,
            target: c.target.into(),
            out: c.out,
            iccs_api: c.iccs_api,
        }
    }
}

impl From<Campaign> for crate::campaign::Campaign {
    fn from(c: Campaign) -> Self {
        crate::campaign::Campaign {
            ids: c.ids,
            target: c.target.into(),
            unsandboxed_host: c.unsandboxed_host,
            system: c.system,
            out: c.out,
            resume: c.resume,
            quick: c.quick,
            allow_unfixed_host: c.allow_unfixed_host,
            no_bench: c.no_bench,
            cpu: c.cpu,
            trials: c.trials,
            timeout: c.timeout,
            memory: c.memory,
            no_profile: c.no_profile,
            no_ct: c.no_ct,
            no_sanitize: c.no_sanitize,
            archives: c.archives,
            source_dirs: c.source_dirs,
            archive_dir: c.archive_dir,
            defer: c.defer,
            jobs: c.jobs,
            dry_run: c.dry_run,
            estimate_timing_cores: c.estimate_timing_cores,
        }
    }
}

impl Ct {
    /// `ct`'s options; `--no-timing` is no measurements.
    pub fn options(&self) -> crate::ct::CtOptions {
        let measurements = if self.no_timing { 0 } else { self.measurements };
        let (ops, runs, timeout_s) = (self.ops.clone(), self.runs, self.timeout);
        crate::ct::CtOptions { ops, runs, timeout_s, measurements, ..crate::ct::CtOptions::default() }
    }
}

// The values of the platform types as the command line spells them (their names are
// the types' own).

impl clap::ValueEnum for Arch {
    fn value_variants<'a>() -> &'a [Self] {
        &Arch::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let names = self.names();
        Some(clap::builder::PossibleValue::new(names[0]).aliases(&names[1..]))
    }
}

impl clap::ValueEnum for EngineChoice {
    fn value_variants<'a>() -> &'a [Self] {
        &EngineChoice::ALL
    }
    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.name()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_arguments_are_resolved_against_the_callers_directory_once() {
        let mut x = Xtask::parse_from([
            "xtask",
            "verify",
            "my/sub.toml",
            "kem-07",
            "--archive",
            "a/BRQC.zip",
            "--out",
            "o",
            "--kat-manifest",
            "k",
        ]);
        x.resolve_paths(Utf8Path::new("/home/u"));
        let Cmd::Verify(v) = x.cmd else { panic!() };
        assert_eq!(v.inputs.ids, ["/home/u/my/sub.toml", "kem-07"]);
        assert_eq!(v.inputs.archive, [Given { id: None, path: "/home/u/a/BRQC.zip".into() }]);
        assert_eq!(v.inputs.out, "/home/u/o");
        assert_eq!(v.kat_manifest.unwrap(), "/home/u/k");
        let mut x = Xtask::parse_from(["xtask", "verify", "--archive", "https://example.invalid/x.zip"]);
        x.resolve_paths(Utf8Path::new("/w"));
        let Cmd::Verify(v) = x.cmd else { panic!() };
        assert_eq!(v.inputs.archive[0].path, "https://example.invalid/x.zip");
        assert!(v.inputs.ids.is_empty(), "no ids: the system profile's campaign set");
        let mut x = Xtask::parse_from(["xtask", "report", "m/fixture-kem.toml", "kem-07", "--out", "o"]);
        x.resolve_paths(Utf8Path::new("/w"));
        let Cmd::Report(r) = x.cmd else { panic!() };
        assert_eq!(r.ids, ["/w/m/fixture-kem.toml", "kem-07"], "report resolves a manifest path as verify does");
        assert_eq!(r.out, "/w/o");
        let mut x = Xtask::parse_from(["xtask", "evidence", "check"]);
        x.resolve_paths(Utf8Path::new("/tmp"));
        let Cmd::Evidence(EvidenceCmd::Check(e)) = x.cmd else { panic!() };
        assert_eq!(e.dir, "/tmp/out");
        for cmd in ["list", "campaign"] {
            let mut x = Xtask::parse_from(["xtask", cmd, "--archives", "dl"]);
            x.resolve_paths(Utf8Path::new("/w"));
            let dir = match x.cmd {
                Cmd::List(l) => l.archive_dir,
                Cmd::Campaign(c) => c.archive_dir,
                _ => panic!(),
            };
            assert_eq!(dir.unwrap(), "/w/dl", "{cmd} --archives is the caller's folder");
        }
    }

    #[test]
    fn sources_take_one_form_everywhere() {
        assert_eq!(given("kem-07=a/B.zip").unwrap(), Given { id: Some("kem-07".into()), path: "a/B.zip".into() });
        assert_eq!(given("a/B.zip").unwrap().id, None);
        let url = given("https://example.invalid/get?file=B.zip").unwrap();
        assert_eq!((url.id, url.path.as_str()), (None, "https://example.invalid/get?file=B.zip"));
        assert!(given("kem-07=").is_err());
    }

    #[test]
    fn memory_sizes_are_checked_before_any_engine_sees_them() {
        assert_eq!(memory("4G").unwrap(), "4g");
        assert_eq!(memory("512m").unwrap(), "512m");
        assert!(memory("5x").unwrap_err().contains("not a size"));
        assert!(memory("1k").unwrap_err().contains("below 6m"));
        assert!(memory("99999999999999999999g").is_err());
    }
}
