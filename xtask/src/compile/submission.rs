//! Submission manifests (`submissions/<id>.toml`): where the source comes from, how
//! each instance is built and which program writes its KATs. Candidates differ
//! here, never in code.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use camino::Utf8PathBuf;
use serde::{Deserialize, Serialize};

use crate::project;

/// The reference build flags of the measurement guide, as the reference harness's guide
/// builds used them (its logs): the guide's set, `-fPIC -D_GNU_SOURCE`, and GCC 14's
/// downgrades of the errors older code trips.
pub const GUIDE_FLAGS: &[&str] = &[
    "-std=c99",
    "-Wpedantic",
    "-Wall",
    "-Wextra",
    "-O2",
    "-fPIC",
    "-D_GNU_SOURCE",
    "-Wno-error=implicit-function-declaration",
    "-Wno-error=incompatible-pointer-types",
    "-Wno-error=int-conversion",
    "-Wno-error=implicit-int",
];

/// The reference harness's own default flags, its fallback where the guide flags fail.
pub const HARNESS_FLAGS: &[&str] = &[
    "-O2",
    "-fPIC",
    "-std=gnu11",
    "-Wall",
    "-Wno-unused",
    "-Wno-unknown-pragmas",
    "-fno-strict-aliasing",
    "-fwrapv",
    "-fno-omit-frame-pointer",
    "-D_GNU_SOURCE",
    "-Wno-error=implicit-function-declaration",
    "-Wno-error=incompatible-pointer-types",
    "-Wno-error=int-conversion",
    "-Wno-error=implicit-int",
];

/// The named flag sets a manifest can pick (`[build] flag_set`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagSet {
    #[default]
    Guide,
    Harness,
}

impl FlagSet {
    pub fn name(self) -> &'static str {
        match self {
            FlagSet::Guide => "guide",
            FlagSet::Harness => "harness",
        }
    }

    fn flags(self) -> &'static [&'static str] {
        match self {
            FlagSet::Guide => GUIDE_FLAGS,
            FlagSet::Harness => HARNESS_FLAGS,
        }
    }
}

/// Link libraries the pinned images provide (their development packages are in the
/// toolchain spec and the image lock).
pub const LINK_LIBRARIES: &[&str] = &["m", "gmp", "quadmath", "crypto"];

/// The ICCS API files a manifest may take from the pinned ICCS API package.
pub const ICCS_FILES: &[&str] = &["drng.c", "auxfunc.c"];

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Submission {
    pub id: String,
    pub name: String,
    /// `kem` (the default), `sig`, `hash` or `kex`: what the drivers and pages are.
    #[serde(default)]
    pub family: crate::family::FamilyId,
    /// Where and how the tool has verified this manifest on the real source; none: a
    /// manifest written from published facts, never built here on the real archive.
    #[serde(default)]
    pub verified: Option<String>,
    /// Page §1 items no evidence gives (absent: "not given"): the implementation
    /// measured (`reference`), and the address of the candidate's security evaluation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evaluation: Option<String>,
    pub source: SourceSpec,
    pub build: BuildSpec,
    pub kat: KatSpec,
    /// How the timing driver reaches the instance's API; no section, no timing.
    #[serde(default)]
    pub bench: Option<BenchSpec>,
    /// The symmetric-primitive groups `cargo xtask profile` wraps; no section, no profile.
    #[serde(default)]
    pub profile: Option<ProfileSpec>,
    /// The architectures the code builds on (x86 intrinsics or assembly: `["x86_64"]`);
    /// empty: any. On another one its instances are not built, and that is no failure.
    #[serde(default)]
    pub arch: Vec<crate::evidence::domain::Arch>,
    /// Values an operation derives from its secret input that are public by design (an
    /// ML-KEM key pair's matrix seed ρ): what `ct` sees inside the named functions is
    /// listed apart, not as a finding, and the operation gets no timing test.
    #[serde(default)]
    pub ct_public_derived: Vec<PublicDerived>,
    #[serde(rename = "instance")]
    pub instances: Vec<Instance>,
    /// Folder of the manifest file; `<base>/<id>/patches/` holds its patches.
    #[serde(skip)]
    pub base_dir: Utf8PathBuf,
    /// The manifest file, for messages.
    #[serde(skip)]
    pub path: Utf8PathBuf,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum SourceSpec {
    /// A crate from the Rust package registry, pinned in sources/Cargo.toml and its lock file.
    Crate {
        name: String,
        version: String,
        /// Folder inside the crate that is the source root.
        #[serde(default)]
        subdir: String,
    },
    /// A zip or tar archive the user supplies, pinned by SHA-256.
    Archive {
        file: String,
        bytes: u64,
        sha256: crate::sha::Sha256Hex,
        /// Human page where the archive is published.
        #[serde(default)]
        page: Option<String>,
        /// Folder inside the archive (below any wrapping folders) that is the source root.
        #[serde(default)]
        root: String,
        /// `[source.limits]`: this archive's own extraction limits, where it is larger than
        /// the defaults allow.
        #[serde(default)]
        limits: Option<ArchiveLimits>,
        /// An archive inside this one that holds `root` and that this tool does not
        /// extract (a rar): runs then need the tree unpacked by hand (`--source-dir`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        nested: Option<String>,
    },
}

/// Extraction limits, as the command line (`--max-extract-mib`, `--max-entries`,
/// `--max-ratio`) or an archive's manifest (`[source.limits]`, the same names) gives
/// them; what neither gives is `extract::ExtractLimits::DEFAULT`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArchiveLimits {
    /// Most bytes the archive may expand to, in MiB.
    #[serde(default)]
    pub max_extract_mib: Option<u64>,
    /// Most entries (files and folders) it may hold.
    #[serde(default)]
    pub max_entries: Option<u64>,
    /// Most expanded bytes per archive byte.
    #[serde(default)]
    pub max_ratio: Option<u64>,
}

/// The largest `max_extract_mib` a manifest may set (1 TiB).
pub const MAX_EXTRACT_MIB: u64 = 1 << 20;

impl SourceSpec {
    /// A crate whose checksum `sources/Cargo.lock` pins: the one source whose code the
    /// host backend may build without `--unsandboxed-host`.
    pub fn is_pinned_crate(&self) -> bool {
        matches!(self, SourceSpec::Crate { .. })
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BuildSpec {
    /// Compiler flags of the manifest's own; default: the named `flag_set`.
    #[serde(default)]
    pub flags: Option<Vec<String>>,
    /// A named flag set instead of the guide flags (`harness`: where the guide flags fail).
    #[serde(default)]
    pub flag_set: Option<FlagSet>,
    /// Link libraries, `-l<name>` after the sources (one of `LINK_LIBRARIES`).
    #[serde(default)]
    pub libs: Vec<String>,
    /// Official ICCS API files (`drng.c`, `auxfunc.c`) from the pinned ICCS API package,
    /// compiled into the library.
    #[serde(default)]
    pub iccs: Vec<String>,
    /// Additions on one architecture only (`[build.arch.aarch64]`).
    #[serde(default)]
    pub arch: BTreeMap<crate::evidence::domain::Arch, ArchSpec>,
    /// Library sources relative to the source root; `{dir}`, `{label}` and instance
    /// vars are expanded; a last component `*.c` takes every C file of that folder.
    #[serde(default)]
    pub sources: Vec<String>,
    /// Instead of `sources`: configure and build the submission's own `CMake` project.
    #[serde(default)]
    pub cmake: Option<CmakeSpec>,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub defines: Vec<String>,
    /// Files that must never be compiled, whatever a pattern matches.
    #[serde(default)]
    pub never_compile: Vec<String>,
    /// The submission defines `drng_algorithm` itself: the drivers only declare it
    /// (`-DNGCC_NO_DRNG=1`, the reference harness's switch), so one state is seeded.
    #[serde(default)]
    pub defines_drng: bool,
}

/// What one architecture adds to `[build]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ArchSpec {
    #[serde(default)]
    pub sources: Vec<String>,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub defines: Vec<String>,
    #[serde(default)]
    pub libs: Vec<String>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BenchSpec {
    /// `iccs` (kem_* and the ICCS DRNG) or `nist` (`crypto_kem`_* with a namespace).
    pub api: BenchApi,
    /// The API header, force-included into the driver.
    pub header: String,
    /// Adapter settings, e.g. `BENCH_NAMESPACE` and `BENCH_RANDOMBYTES` for `nist`.
    #[serde(default)]
    pub defines: Vec<String>,
}

/// `[profile]`: named groups of link-time-wrapped symbols.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSpec {
    pub groups: Vec<Group>,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Short name for tables (`pseudohash`, `drng`, `shake`).
    pub name: String,
    pub kind: GroupKind,
    /// The implementation family, for survey notes (`ICCS`, `Keccak`, `SHA-2`, `AES`).
    pub family: String,
    /// Entry points, each taking at most six integer or pointer arguments (the
    /// wrappers pass six registers through).
    pub symbols: Vec<String>,
}

pub use crate::evidence::domain::GroupKind;

impl GroupKind {
    pub fn is_iccs(self) -> bool {
        matches!(self, GroupKind::IccsHash | GroupKind::IccsDrng)
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BenchApi {
    Iccs,
    Nist,
}

impl BenchApi {
    pub fn name(self) -> &'static str {
        match self {
            BenchApi::Iccs => "iccs",
            BenchApi::Nist => "nist",
        }
    }
}

/// A `CMake` project built inside the container with the pinned cmake; the harness
/// injects the flags through `CMAKE_C_FLAGS`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CmakeSpec {
    /// Extra `-D...` configure arguments.
    #[serde(default)]
    pub configure: Vec<String>,
    /// The one target to build.
    pub target: String,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct KatSpec {
    /// Sources of the program that prints the KAT text on stdout: relative to the
    /// source root, or `driver:<file>` for the harness's own drivers/.
    #[serde(default)]
    pub program: Vec<String>,
    /// cmake recipe: the KAT command, its program relative to the build folder.
    #[serde(default)]
    pub run: Vec<String>,
    #[serde(default)]
    pub include: Vec<String>,
    #[serde(default)]
    pub defines: Vec<String>,
    /// Name of the KAT file in kat.sha256 (`{label}` expanded).
    pub file: String,
    /// The instance's API header, force-included into the KAT driver.
    #[serde(default)]
    pub api_header: Option<String>,
    /// The submitted KAT file in the source tree, used to locate the first differing
    /// record of a MISMATCH (only when it hashes to the expected digest).
    #[serde(default)]
    pub reference: Option<String>,
    /// Signatures: `carry` (the official driver: lengths set once and carried from record
    /// to record) or `reset` (each record starts from the claimed sizes).
    #[serde(default)]
    pub lengths: Lengths,
}

pub use crate::evidence::domain::Lengths;

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Instance {
    pub label: String,
    pub dir: String,
    #[serde(default)]
    pub vars: BTreeMap<String, String>,
    /// Flags beyond the common ones; shown in every output line of this instance.
    #[serde(default)]
    pub extra_flags: Vec<String>,
    /// This instance's own sources, after `[build] sources`.
    #[serde(default)]
    pub sources: Vec<String>,
    /// This instance's own defines, after `[build] defines`.
    #[serde(default)]
    pub defines: Vec<String>,
    /// Flags for the library's link only (`-Wl,...`: `--defsym` aliases), after its
    /// sources; no driver is linked with them.
    #[serde(default)]
    pub link_flags: Vec<String>,
    #[serde(default)]
    pub never_compile: Vec<String>,
    /// This instance's own official ICCS files, beside `[build] iccs`.
    #[serde(default)]
    pub iccs: Vec<String>,
    /// Records the KAT driver replays (the submitted file may hold more or fewer).
    #[serde(default = "default_records")]
    pub kat_records: u32,
    /// This instance's KAT time limit in seconds, unless `--timeout` is given.
    #[serde(default)]
    pub timeout: Option<u64>,
    /// This instance's KAT output cap in MiB, unless `--output-cap-mib` is given.
    #[serde(default)]
    pub output_cap_mib: Option<u64>,
    /// Very slow: `campaign --defer` runs it after every other instance.
    #[serde(default)]
    pub slow: bool,
    /// A documented KAT failure (with its cause): shown as a footnote beside the status
    /// observed, and not counted as a finding of the run.
    #[serde(default)]
    pub known_issue: Option<String>,
    /// Hash functions: the digest width in bits the drivers ask for (headers often give
    /// one `DIGEST_BIT_LENGTH` for every instance, so the manifest says it).
    #[serde(default)]
    pub digest_bits: Option<u32>,
    /// Key exchanges: the message passes its `kex_get_passes_num()` declares (0 derives
    /// from the initial states); the drivers check the library says the same.
    #[serde(default)]
    pub passes: Option<u32>,
    /// Bytes of the secret key that are public (a copy of the public key inside it, say):
    /// `ct` marks them defined again whenever it makes the key secret.
    #[serde(default)]
    pub ct_public_sk: Vec<PublicBytes>,
    /// Hash functions: an extendable-output instance. Its `digest_bits` is then the one
    /// output length the drivers ask for (the official KAT driver asks a fixed length
    /// per label), not a digest width the function is limited to.
    #[serde(default)]
    pub xof: bool,
    /// `false`: verified, never timed (bench and campaign skip it, the page says why).
    #[serde(default = "yes")]
    pub timed: bool,
    /// The architectures this instance's code builds on (empty: the submission's).
    #[serde(default)]
    pub arch: Vec<crate::evidence::domain::Arch>,
    /// A variant with no KAT of its own (an optimized build that is timed): the label of
    /// the instance whose KAT file and `kat.sha256` line its KAT text is checked against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kat_from: Option<String>,
    /// Not the reference implementation (an `Optimized_Implementation` build): timed
    /// beside it, shown as a row group of its own, never among the reference figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<Variant>,
}

/// What a non-reference instance is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    /// An optimized implementation (AVX2, NEON, ...) of the same scheme.
    Optimized,
}

fn yes() -> bool {
    true
}

/// Bytes `[from, to)` of a secret key that are public, and why (the record and the page
/// repeat it).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PublicBytes {
    pub from: u64,
    pub to: u64,
    pub why: String,
}

/// A public value an operation computes from its secret input (`ct_public_derived`).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PublicDerived {
    /// The operation (one `ct` checks).
    pub op: String,
    /// Functions that work on the public value only: a report whose stack passes through
    /// one of them (by name, or by its last `_`-separated part, for prefixed names) is
    /// about that value.
    pub functions: Vec<String>,
    pub why: String,
}

impl PublicDerived {
    /// Whether `function` (a stack frame's) is one of these.
    pub fn names(&self, function: &str) -> bool {
        self.functions
            .iter()
            .any(|f| function == f || function.strip_suffix(f.as_str()).is_some_and(|p| p.ends_with('_')))
    }

    /// `keygen: values derived in gen_matrix (why)`.
    pub fn describe(&self) -> String {
        format!("{}: values derived in {} ({})", self.op, self.functions.join(", "), self.why)
    }
}

impl PublicBytes {
    /// `secret key bytes 768..1568 (why)`.
    pub fn describe(&self) -> String {
        format!("secret key bytes {}..{} ({})", self.from, self.to, self.why)
    }
}

/// The most public ranges an instance may declare.
pub const MAX_PUBLIC_RANGES: usize = 8;

/// The widest digest the KAT Loop can chain (it rotates an 8192-bit message by it).
pub const MAX_DIGEST_BITS: u32 = 8192;

/// Link-only flags: each a `-Wl,` flag, and only where the harness links the library.
fn validate_link_flags(sub: &Submission, inst: &Instance, text: &str) -> Result<()> {
    if sub.build.cmake.is_some() {
        bail!("{}: instance {}: `link_flags` need the cc recipe, not cmake", sub.path, inst.label);
    }
    match inst.link_flags.iter().find(|f| !f.starts_with("-Wl,") || f.len() == 4) {
        Some(f) => bail!(
            "{}: link flag {f:?} is no `-Wl,...` flag: only the linker's are link-only",
            locate(&sub.path, text, f)
        ),
        None => Ok(()),
    }
}

/// The official KAT schedule's record count.
pub const KAT_RECORDS: u32 = 10;

fn default_records() -> u32 {
    KAT_RECORDS
}

impl Submission {
    /// What this submission's family is: its operations, sizes, drivers and pages.
    pub fn family(&self) -> Result<&'static crate::family::Family> {
        self.family.get().with_context(|| format!("{}: family = \"{}\"", self.path, self.family))
    }

    pub fn dir() -> Utf8PathBuf {
        project::root().join("submissions")
    }

    /// Load `submissions/<id>.toml`, or a manifest file given by path.
    pub fn load(id: &str) -> Result<Submission> {
        let path = if id.ends_with(".toml") {
            let p = Utf8PathBuf::from(id);
            p.canonicalize_utf8().unwrap_or(p)
        } else {
            if let Err(why) = project::plain_name(id) {
                return crate::ui::usage(format!(
                    "unknown submission `{id}`: a submission id {why} (known: {})",
                    id_ranges(&Self::ids()?)
                ));
            }
            Self::dir().join(format!("{id}.toml"))
        };
        if !path.is_file() {
            let known = Self::ids()?;
            return crate::ui::usage(format!(
                "unknown submission `{id}`: no {path}{} (known: {})",
                project::suggest(id, known.iter().map(String::as_str)),
                id_ranges(&known)
            ));
        }
        let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
        Submission::from_text(&path, &text)
    }

    /// A manifest's text, parsed and checked (`path` names it in messages); a manifest
    /// that does not check is a usage error (exit 2).
    pub fn from_text(path: &Utf8PathBuf, text: &str) -> Result<Submission> {
        Submission::parse(path, text).map_err(crate::ui::Usage::of)
    }

    fn parse(path: &Utf8PathBuf, text: &str) -> Result<Submission> {
        let path = path.clone();
        let mut sub: Submission = toml::from_str(text).with_context(|| format!("invalid manifest {path}"))?;
        if Some(sub.id.as_str()) != path.file_stem() {
            bail!("{}: id = {:?} does not match the file name", locate(&path, text, &sub.id), sub.id);
        }
        if let Err(why) = project::plain_name(&sub.id) {
            bail!("{}: id {:?} {why}", locate(&path, text, &sub.id), sub.id);
        }
        sub.base_dir = path.parent().map(Utf8PathBuf::from).unwrap_or_default();
        sub.path = path.clone();
        sub.validate(text)?;
        Ok(sub)
    }

    pub fn ids() -> Result<Vec<String>> {
        project::toml_stems(&Self::dir())
    }

    /// `kat/<id>/kat.sha256` for shipped submissions, `<base>/<id>/kat.sha256` otherwise.
    pub fn kat_manifest_path(&self) -> Utf8PathBuf {
        if self.base_dir == Self::dir() {
            project::kat_manifest_path(&self.id)
        } else {
            self.base_dir.join(&self.id).join("kat.sha256")
        }
    }

    pub fn patches_dir(&self) -> Utf8PathBuf {
        self.base_dir.join(&self.id).join("patches")
    }

    /// `path:line:col` of the first quoted `needle` in the manifest, for messages.
    pub fn locate(&self, needle: &str) -> String {
        let text = std::fs::read_to_string(&self.path).unwrap_or_default();
        locate(&self.path, &text, needle)
    }

    fn validate(&self, text: &str) -> Result<()> {
        let invalid = |needle: &str, what: String| anyhow::anyhow!("{}: {what}", locate(&self.path, text, needle));
        if self.instances.is_empty() {
            bail!("{}: no [[instance]]", self.path);
        }
        match (&self.build.cmake, self.build.sources.is_empty()) {
            (Some(_), false) => bail!("[build] has both `sources` and `cmake`: pick one recipe"),
            (None, true) => bail!("[build] needs `sources` (cc recipe) or `[build.cmake]`"),
            (Some(_), true) if self.kat.run.is_empty() => bail!("the cmake recipe needs [kat] run"),
            (None, false) if self.kat.program.is_empty() => bail!("the cc recipe needs [kat] program"),
            _ => {}
        }
        let mut seen = std::collections::BTreeSet::new();
        for inst in &self.instances {
            if !seen.insert(&inst.label) {
                bail!("instance label {} appears twice", inst.label);
            }
            if let Err(why) = project::plain_name(&inst.label) {
                return Err(invalid(&inst.label, format!("instance label {:?} {why}", inst.label)));
            }
            for (field, pattern) in self.paths(inst) {
                let expanded = inst.expand(pattern);
                let checked = match expanded.strip_prefix("driver:") {
                    Some(d) => check_driver(d),
                    // The instance folder may be the source root itself.
                    None if field == "dir" && expanded == "." => Ok(()),
                    None => check_rel_path(glob(&expanded).map_or(expanded.as_str(), |g| g.0)),
                };
                if let Err(why) = checked {
                    let what = format!("{field} {pattern:?} (instance {}: {expanded:?}) {why}", inst.label);
                    return Err(invalid(pattern, what));
                }
            }
        }
        self.validate_build(text)?;
        self.validate_profile(text)?;
        self.validate_kat_from(text)?;
        self.validate_limits(text)?;
        let (SourceSpec::Archive { root, .. } | SourceSpec::Crate { subdir: root, .. }) = &self.source;
        if !root.is_empty() {
            check_rel_path(root).map_err(|why| invalid(root, format!("source folder {root:?} {why}")))?;
        }
        Ok(())
    }

    /// `kat_from` names another instance of this manifest, one with a KAT of its own
    /// (no chains: the digest a variant is checked against is one line away).
    fn validate_kat_from(&self, text: &str) -> Result<()> {
        for inst in &self.instances {
            let Some(from) = &inst.kat_from else { continue };
            // The `kat_from` line where it is written plainly, else the first quoted label.
            let line = format!("kat_from = \"{from}\"");
            let place = locate(&self.path, text, if text.contains(&line) { &line } else { from });
            let at = || format!("{place}: instance {}: kat_from = {from:?}", inst.label);
            let labels = || self.instances.iter().map(|i| i.label.as_str());
            let Some(owner) = self.instances.iter().find(|i| &i.label == from) else {
                let hint = project::suggest(from, labels().filter(|l| *l != inst.label));
                bail!("{} names no instance{hint} (instances: {})", at(), labels().collect::<Vec<_>>().join(", "));
            };
            if owner.label == inst.label {
                bail!("{} names the instance itself: leave kat_from out for an instance with its own KAT", at());
            }
            if let Some(next) = &owner.kat_from {
                bail!(
                    "{} names an instance that takes its KAT from {next:?} itself; name {next:?}, whose KAT it is \
                     (no chains)",
                    at()
                );
            }
        }
        Ok(())
    }

    /// `[source.limits]`: positive values, and at most [`MAX_EXTRACT_MIB`].
    fn validate_limits(&self, text: &str) -> Result<()> {
        let SourceSpec::Archive { limits: Some(l), .. } = &self.source else { return Ok(()) };
        for (name, value) in
            [("max_extract_mib", l.max_extract_mib), ("max_entries", l.max_entries), ("max_ratio", l.max_ratio)]
        {
            if value == Some(0) {
                bail!("{}: [source.limits] {name} = 0 would refuse every archive", locate(&self.path, text, name));
            }
        }
        if let Some(mib) = l.max_extract_mib.filter(|m| *m > MAX_EXTRACT_MIB) {
            bail!(
                "{}: [source.limits] max_extract_mib = {mib} is above {MAX_EXTRACT_MIB} (1 TiB)",
                locate(&self.path, text, "max_extract_mib")
            );
        }
        Ok(())
    }

    /// The instance whose KAT file and `kat.sha256` line `inst`'s KAT text is checked
    /// against: the one its `kat_from` names, else itself.
    pub fn kat_owner<'a>(&'a self, inst: &'a Instance) -> &'a Instance {
        let named = inst.kat_from.as_ref().and_then(|l| self.instances.iter().find(|i| &i.label == l));
        named.unwrap_or(inst)
    }

    /// Libraries, ICCS files, flag sets and per-instance limits: known values only.
    fn validate_build(&self, text: &str) -> Result<()> {
        let b = &self.build;
        if b.flags.is_some() && b.flag_set.is_some() {
            bail!("{}: [build] has both `flags` and `flag_set`: pick one", self.path);
        }
        for inst in self.instances.iter().filter(|i| !i.link_flags.is_empty()) {
            validate_link_flags(self, inst, text)?;
        }
        if b.defines_drng && b.cmake.is_some() {
            bail!("{}: `defines_drng` applies to the harness's drivers, which a cmake build does not use", self.path);
        }
        let libs = b.libs.iter().chain(b.arch.values().flat_map(|a| &a.libs));
        for lib in libs {
            if !LINK_LIBRARIES.contains(&lib.as_str()) {
                bail!(
                    "{}: link library {lib:?} is not one the pinned images provide ({})",
                    locate(&self.path, text, lib),
                    LINK_LIBRARIES.join(", ")
                );
            }
        }
        for f in b.iccs.iter().chain(self.instances.iter().flat_map(|i| &i.iccs)) {
            if !ICCS_FILES.contains(&f.as_str()) {
                bail!("{}: iccs file {f:?} is not one of {}", locate(&self.path, text, f), ICCS_FILES.join(", "));
            }
        }
        if self.takes_iccs() && b.cmake.is_some() {
            bail!("{}: `iccs` needs the cc recipe", self.path);
        }
        for inst in &self.instances {
            if inst.kat_records == 0 || inst.timeout == Some(0) || inst.output_cap_mib == Some(0) {
                bail!(
                    "{}: instance {}: kat_records, timeout and output_cap_mib must be positive",
                    self.path,
                    inst.label
                );
            }
            self.validate_width(inst)?;
            self.validate_xof(inst)?;
            self.validate_passes(inst)?;
            self.validate_public(inst)?;
        }
        self.validate_derived()
    }

    /// Each public-derived entry names an operation `ct` checks, functions (C names) and
    /// a reason.
    fn validate_derived(&self) -> Result<()> {
        for d in &self.ct_public_derived {
            let at = format!("{}: ct_public_derived for {:?}", self.path, d.op);
            let ct = self.family()?.ct.with_context(|| format!("{at}: a {} has no ct check", self.family))?;
            if !ct.ops.iter().any(|o| o.id == d.op) {
                let ops: Vec<&str> = ct.ops.iter().map(|o| o.id).collect();
                bail!("{at}: not an operation ct checks ({})", ops.join(", "));
            }
            let c_name = |f: &String| !f.is_empty() && f.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if d.functions.is_empty() || !d.functions.iter().all(c_name) || d.why.trim().is_empty() {
                bail!("{at}: needs C function names and a reason");
            }
        }
        Ok(())
    }

    /// A digest width where the family has one: whole bytes (the KAT text prints
    /// `dbits/8` bytes, so other widths would be cut silently), at most the Loop's.
    fn validate_width(&self, inst: &Instance) -> Result<()> {
        let wants = self.family().is_ok_and(|f| f.digest_width);
        let at = || format!("{}: instance {}", self.path, inst.label);
        match inst.digest_bits {
            None if wants => bail!("{}: a {} instance needs `digest_bits` (its digest width)", at(), self.family),
            Some(_) if !wants => bail!("{}: `digest_bits` applies to hash functions only", at()),
            Some(b) if b == 0 || b % 8 != 0 => bail!(
                "{}: digest_bits = {b} is not a whole number of bytes; the ICCS KAT text prints digest_bits/8 \
                 bytes, so {} bits would be dropped without a word. Widths that are not multiples of 8 are refused",
                at(),
                b % 8
            ),
            Some(b) if b > MAX_DIGEST_BITS => {
                bail!("{}: digest_bits = {b} is above {MAX_DIGEST_BITS}, the width the KAT Loop can chain", at())
            }
            _ => Ok(()),
        }
    }

    /// `xof` only where the family has a digest width (which is then the output length).
    fn validate_xof(&self, inst: &Instance) -> Result<()> {
        if inst.xof && !self.family().is_ok_and(|f| f.digest_width) {
            bail!("{}: instance {}: `xof` applies to hash functions only", self.path, inst.label);
        }
        Ok(())
    }

    /// Why this submission's archive cannot be used as it is: its code sits in a nested
    /// archive (`[source] nested`) the tool does not extract.
    pub fn nested_refusal(&self) -> Option<String> {
        let SourceSpec::Archive { file, root, nested: Some(inner), .. } = &self.source else { return None };
        Some(format!(
            "{}: {file} holds its code in a nested archive, {inner}, which this tool does not extract \
             (zip and tar only); unpack it by hand and pass --source-dir {}=DIR, DIR being the folder \
             that holds {root}",
            self.id, self.id
        ))
    }

    /// The architectures `inst` builds on: its own list, else the submission's; empty: any.
    pub fn arches_of<'a>(&'a self, inst: &'a Instance) -> &'a [crate::evidence::domain::Arch] {
        if inst.arch.is_empty() {
            &self.arch
        } else {
            &inst.arch
        }
    }

    /// Why `inst` is not built on `arch`, if the manifest restricts it to others:
    /// `not built: x86-64 only (manifest)`. Decided before any image or build.
    pub fn not_built_on(&self, inst: &Instance, arch: crate::evidence::domain::Arch) -> Option<String> {
        let only = self.arches_of(inst);
        if only.is_empty() || only.contains(&arch) {
            return None;
        }
        let names: Vec<&str> = only.iter().map(|a| a.display()).collect();
        Some(format!("not built: {} only (manifest)", names.join(", ")))
    }

    /// A number of passes where the family has them, at most what the drivers replay.
    fn validate_passes(&self, inst: &Instance) -> Result<()> {
        let wants = self.family().is_ok_and(|f| f.passes);
        let at = || format!("{}: instance {}", self.path, inst.label);
        match inst.passes {
            None if wants => bail!("{}: a {} instance needs `passes` (its kex_get_passes_num())", at(), self.family),
            Some(_) if !wants => bail!("{}: `passes` applies to key exchanges only", at()),
            Some(p) if p > crate::family::MAX_PASSES => {
                bail!("{}: passes = {p} is above {}, the most the drivers replay", at(), crate::family::MAX_PASSES)
            }
            _ => Ok(()),
        }
    }

    /// Public ranges of a secret key: only where `ct` makes a key secret, each non-empty,
    /// explained, in order and apart.
    fn validate_public(&self, inst: &Instance) -> Result<()> {
        let ranges = &inst.ct_public_sk;
        let at = || format!("{}: instance {}: ct_public_sk", self.path, inst.label);
        if ranges.is_empty() {
            return Ok(());
        }
        if self.family().is_ok_and(|f| f.ct.is_none()) {
            bail!("{}: a {} has no secret key for ct", at(), self.family);
        }
        if ranges.len() > MAX_PUBLIC_RANGES {
            bail!("{}: {} ranges, at most {MAX_PUBLIC_RANGES}", at(), ranges.len());
        }
        for (i, r) in ranges.iter().enumerate() {
            if r.from >= r.to || r.why.trim().is_empty() {
                bail!("{}: {}..{} must be a non-empty range with a reason", at(), r.from, r.to);
            }
            if i > 0 && ranges[i - 1].to > r.from {
                bail!("{}: {}..{} overlaps or precedes the range before it", at(), r.from, r.to);
            }
        }
        Ok(())
    }

    /// The KAT files of `inst`, one per part of its family, with their names
    /// (`KAT_2_12_<file>`): those of its `kat_from` instance, if it names one.
    pub fn kat_files(&self, inst: &Instance) -> Result<Vec<(crate::family::KatPart, String)>> {
        let file = self.kat_owner(inst).expand(&self.kat.file);
        Ok(self.family()?.kat_parts.iter().map(|p| (*p, format!("{}{file}", p.prefix))).collect())
    }

    /// Profile symbols become linker options and C macro arguments: C identifiers
    /// only, each in one group.
    fn validate_profile(&self, text: &str) -> Result<()> {
        let Some(profile) = &self.profile else { return Ok(()) };
        let ident = |s: &str| {
            s.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        };
        let mut seen = std::collections::BTreeSet::new();
        for g in &profile.groups {
            if !ident(&g.name) || g.symbols.is_empty() {
                bail!("{}: group {:?} needs a plain name and symbols", locate(&self.path, text, &g.name), g.name);
            }
            for s in &g.symbols {
                if !ident(s) || !seen.insert(s) {
                    bail!("{}: symbol {s:?} is not a C identifier or is listed twice", locate(&self.path, text, s));
                }
            }
        }
        Ok(())
    }

    /// Every path the manifest names for `inst`, with its field, unexpanded.
    fn paths<'a>(&'a self, inst: &'a Instance) -> Vec<(&'static str, &'a str)> {
        let mut v: Vec<(&'static str, &'a str)> = vec![("dir", inst.dir.as_str())];
        let b = &self.build;
        v.extend(b.sources.iter().chain(&inst.sources).map(|p| ("build.sources", p.as_str())));
        v.extend(b.include.iter().map(|p| ("build.include", p.as_str())));
        v.extend(b.never_compile.iter().chain(&inst.never_compile).map(|p| ("build.never_compile", p.as_str())));
        for spec in b.arch.values() {
            v.extend(spec.sources.iter().map(|p| ("build.arch.sources", p.as_str())));
            v.extend(spec.include.iter().map(|p| ("build.arch.include", p.as_str())));
        }
        v.extend(self.kat.program.iter().map(|p| ("kat.program", p.as_str())));
        v.extend(self.kat.include.iter().map(|p| ("kat.include", p.as_str())));
        v.extend(self.kat.api_header.iter().map(|p| ("kat.api_header", p.as_str())));
        v.extend(self.kat.reference.iter().map(|p| ("kat.reference", p.as_str())));
        v.extend(self.bench.iter().map(|b| ("bench.header", b.header.as_str())));
        v
    }

    /// Whether any instance takes official files from the ICCS API package.
    pub fn takes_iccs(&self) -> bool {
        !self.build.iccs.is_empty() || self.instances.iter().any(|i| !i.iccs.is_empty())
    }

    /// The official ICCS files `inst` takes.
    pub fn iccs_files<'a>(&'a self, inst: &'a Instance) -> Vec<&'a String> {
        self.build.iccs.iter().chain(&inst.iccs).collect()
    }

    pub fn flags(&self) -> Vec<String> {
        match &self.build.flags {
            Some(f) => f.clone(),
            None => self.build.flag_set.unwrap_or_default().flags().iter().map(|f| (*f).to_owned()).collect(),
        }
    }

    /// Which named flag set an instance is built with, for the output tables.
    pub fn flag_set(&self, inst: &Instance) -> String {
        let base = match (&self.build.flags, self.build.flag_set) {
            (Some(_), _) => "manifest",
            (None, set) => set.unwrap_or_default().name(),
        };
        if inst.extra_flags.is_empty() {
            base.to_owned()
        } else {
            format!("{base} + {}", inst.extra_flags.join(" "))
        }
    }
}

/// `--instance` labels: each must be an instance of one of `subs`. The unknown ones
/// are named (the first ten, cut to a plain name's length, and how many more), with
/// the known ones.
pub fn check_selection(given: &[String], subs: &[Submission]) -> Result<()> {
    let known: std::collections::BTreeSet<&str> =
        subs.iter().flat_map(|s| s.instances.iter().map(|i| i.label.as_str())).collect();
    let unknown: Vec<&str> = given.iter().map(String::as_str).filter(|l| !known.contains(l)).collect();
    if unknown.is_empty() {
        return Ok(());
    }
    let shown: Vec<String> = unknown
        .iter()
        .take(10)
        .map(|l| format!("{:?}", l.chars().take(project::NAME_MAX).collect::<String>()))
        .collect();
    let more =
        if unknown.len() > shown.len() { format!(" and {} more", unknown.len() - shown.len()) } else { String::new() };
    let ids: Vec<&str> = subs.iter().map(|s| s.id.as_str()).collect();
    let hint = project::suggest(unknown[0], known.iter().copied());
    crate::ui::usage(format!(
        "--instance: {} unknown label(s): {}{more}{hint}; {} has instances {}",
        unknown.len(),
        shown.join(", "),
        ids.join(", "),
        known.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

/// A manifest path after expansion: relative, inside the source root, and plain (no
/// `.` or `..` component), so that one file has one name.
pub fn check_rel_path(p: &str) -> std::result::Result<(), String> {
    if p.is_empty() {
        return Err("is empty".into());
    }
    if p.starts_with('/') {
        return Err("is absolute: paths are relative to the source root".into());
    }
    // Segment by segment: camino and std normalize an inner `.` away.
    for segment in p.split('/') {
        match segment {
            "." => return Err("has a `.` component: write the plain path".into()),
            ".." => return Err("has `..`: it would leave the source root".into()),
            "" => return Err("has an empty component: write the plain path".into()),
            _ => {}
        }
    }
    Ok(())
}

/// `driver:<file>`: one of the harness's own drivers.
/// `driver:<path>`: a file or folder of drivers/ (never above it).
fn check_driver(file: &str) -> std::result::Result<(), String> {
    let inside = !file.is_empty()
        && camino::Utf8Path::new(file).components().all(|c| matches!(c, camino::Utf8Component::Normal(_)));
    if !inside || !project::drivers_dir().join(file).exists() {
        return Err(format!("names no file or folder of drivers/ (driver:{file})"));
    }
    Ok(())
}

/// `path:line:col` of the first quoted `needle` in `text` (else of the bare text, else
/// the path alone).
fn locate(path: &camino::Utf8Path, text: &str, needle: &str) -> String {
    let quoted = format!("\"{needle}\"");
    let Some(at) = text.find(&quoted).map(|i| i + 1).or_else(|| text.find(needle)) else {
        return path.to_string();
    };
    let line = text[..at].matches('\n').count() + 1;
    let col = text[..at].rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    format!("{path}:{line}:{col}")
}

impl Instance {
    /// An instance with this label and every other field at its default.
    pub fn named(label: &str) -> Instance {
        toml::from_str(&format!("label = {label:?}\ndir = \".\"")).expect("a plain instance parses")
    }

    /// Expand `{dir}`, `{label}` and the instance's vars.
    pub fn expand(&self, pattern: &str) -> String {
        let mut s = pattern.replace("{dir}", &self.dir).replace("{label}", &self.label);
        for (k, v) in &self.vars {
            s = s.replace(&format!("{{{k}}}"), v);
        }
        s
    }
}

/// Sorted ids with runs of consecutive numbers folded (`kem-01..41`), so that an error
/// naming 119 candidates stays one readable line.
fn id_ranges(ids: &[String]) -> String {
    let split = |id: &str| -> Option<(String, u32, usize)> {
        let (prefix, digits) = id.rsplit_once('-')?;
        let n = digits.parse().ok().filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))?;
        Some((prefix.to_owned(), n, digits.len()))
    };
    let mut out: Vec<String> = Vec::new();
    let mut run: Option<(String, u32, u32, usize)> = None;
    let close = |run: &mut Option<(String, u32, u32, usize)>, out: &mut Vec<String>| {
        if let Some((p, a, b, w)) = run.take() {
            out.push(if a == b { format!("{p}-{a:0w$}") } else { format!("{p}-{a:0w$}..{b:0w$}") });
        }
    };
    for id in ids {
        match (split(id), run.as_mut()) {
            (Some((p, n, w)), Some(r)) if r.0 == p && r.3 == w && r.2 + 1 == n => r.2 = n,
            (Some((p, n, w)), _) => {
                close(&mut run, &mut out);
                run = Some((p, n, n, w));
            }
            (None, _) => {
                close(&mut run, &mut out);
                out.push(id.clone());
            }
        }
    }
    close(&mut run, &mut out);
    out.join(", ")
}

/// A folder pattern: `<dir>/*.c` or `<dir>/*.S` (the folder and the file suffix).
pub fn glob(pattern: &str) -> Option<(&str, &'static str)> {
    [".c", ".S"].into_iter().find_map(|ext| pattern.strip_suffix(&format!("/*{ext}")).map(|dir| (dir, ext)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_fold_into_ranges() {
        let ids: Vec<String> =
            ["baseline-hash", "kem-01", "kem-02", "kem-03", "kem-05", "kex-09", "pqclean-ml-kem", "sign-34"]
                .map(String::from)
                .into();
        assert_eq!(id_ranges(&ids), "baseline-hash, kem-01..03, kem-05, kex-09, pqclean-ml-kem, sign-34");
    }

    use super::*;

    #[test]
    fn every_shipped_manifest_loads() {
        for id in Submission::ids().unwrap() {
            let sub = Submission::load(&id).unwrap();
            assert!(!sub.instances.is_empty(), "{id}");
        }
    }

    /// The error of a manifest that does not check: always the operator's (exit 2).
    fn load_text(dir: &camino::Utf8Path, text: &str) -> anyhow::Error {
        let path = dir.join("bad.toml");
        std::fs::write(&path, text).unwrap();
        let e = Submission::load(path.as_str()).unwrap_err();
        assert_eq!(crate::ui::exit_code(&e), crate::ui::exit::USAGE, "{e:#}");
        e
    }

    const GOOD: &str = "id = \"bad\"\nname = \"x\"\n[source]\nkind = \"archive\"\nfile = \"a.zip\"\nbytes = 1\n\
        sha256 = \"SHA\"\n[build]\nsources = [\"SRC\"]\n[kat]\nprogram = [\"driver:iccs_kem_kat.c\"]\n\
        file = \"k.txt\"\n[[instance]]\nlabel = \"L\"\ndir = \"d\"\n";

    #[test]
    fn manifest_errors_name_file_line_and_column() {
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let good = GOOD.replace("SHA", &"a".repeat(64));
        let path = dir.join("bad.toml");
        std::fs::write(&path, good.replace("SRC", "{dir}/x.c")).unwrap();
        Submission::load(path.as_str()).unwrap();
        let e = format!("{:#}", load_text(dir, &GOOD.replace("SHA", "abc").replace("SRC", "x.c")));
        // The source table is read whole, so its line is named, with the bad value.
        assert!(e.contains("line 3, column 1") && e.contains("\"abc\" is not a SHA-256"), "{e}");
        for (src, why) in [
            ("../x.c", "has `..`"),
            ("/etc/x.c", "is absolute"),
            ("{dir}/./KAT_KEM.c", "has a `.` component"),
            ("{dir}/../../*.c", "has `..`"),
        ] {
            let e = format!("{:#}", load_text(dir, &good.replace("SRC", src)));
            assert!(e.contains(&format!("{path}:9:13")) && e.contains(why), "{src}: {e}");
        }
        // Labels become file names and table cells: the plain set only, at their place.
        for label in ["L|`x`", "../L", ".L", "-L", "L L"] {
            let e =
                format!("{:#}", load_text(dir, &good.replace("SRC", "x.c").replace("\"L\"", &format!("{label:?}"))));
            assert!(e.contains(&format!("{path}:14:10")) && e.contains("instance label"), "{label}: {e}");
        }
        let e = format!(
            "{:#}",
            load_text(dir, &good.replace("SRC", "x.c").replace("driver:iccs_kem_kat.c", "driver:nope.c"))
        );
        assert!(e.contains(&format!("{path}:11:13")) && e.contains("drivers/"), "{e}");
        // Profile symbols become linker options and macro arguments: identifiers only.
        let profile = |symbols: &str| {
            format!("{}\n[[profile.groups]]\nname = \"hash\"\nkind = \"iccs-hash\"\nfamily = \"ICCS\"\nsymbols = [{symbols}]\n", good.replace("SRC", "x.c"))
        };
        std::fs::write(&path, profile("\"pseudohash\", \"sm3hash\"")).unwrap();
        assert_eq!(Submission::load(path.as_str()).unwrap().profile.unwrap().groups[0].symbols.len(), 2);
        for bad in ["\"-Wl,--wrap=x\"", "\"x) X(1,y\"", "\"a\", \"a\"", ""] {
            let e = format!("{:#}", load_text(dir, &profile(bad)));
            assert!(e.contains(path.as_str()) && (e.contains("C identifier") || e.contains("needs")), "{bad}: {e}");
        }
    }

    #[test]
    fn unknown_instance_labels_are_refused_by_name() {
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let path = dir.join("bad.toml");
        std::fs::write(&path, GOOD.replace("SHA", &"a".repeat(64)).replace("SRC", "x.c")).unwrap();
        let subs = [Submission::load(path.as_str()).unwrap()];
        let e = format!("{:#}", Submission::load("../../etc/passwd").unwrap_err());
        assert!(e.contains("unknown submission `../../etc/passwd`: a submission id holds '/'"), "{e}");
        check_selection(&["L".into()], &subs).unwrap();
        check_selection(&[], &subs).unwrap();
        let mut given: Vec<String> = (0..20_000).map(|i| format!("nope-{i}")).collect();
        given.push("L".into());
        let e = format!("{:#}", check_selection(&given, &subs).unwrap_err());
        assert!(e.contains("20000 unknown label(s): \"nope-0\", \"nope-1\"") && e.contains("and 19990 more"), "{e}");
        assert!(e.ends_with("bad has instances L") && e.len() < 400, "{e}");
    }

    #[test]
    fn public_derived_values_name_an_operation_ct_checks_c_functions_and_a_reason() {
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let with = |entry: &str| {
            let good = GOOD.replace("SHA", &"a".repeat(64)).replace("SRC", "x.c");
            good.replace("[[instance]]", &format!("[[ct_public_derived]]\n{entry}\n[[instance]]"))
        };
        let ok = "op = \"keygen\"\nfunctions = [\"gen_matrix\"]\nwhy = \"rho\"";
        std::fs::write(dir.join("bad.toml"), with(ok)).unwrap();
        let sub = Submission::load(dir.join("bad.toml").as_str()).unwrap();
        assert_eq!(sub.ct_public_derived[0].functions, ["gen_matrix"]);
        for (entry, why) in [
            (ok.replace("keygen", "sign"), "not an operation ct checks (keygen, enc, dec)"),
            (ok.replace("[\"gen_matrix\"]", "[]"), "needs C function names and a reason"),
            (ok.replace("gen_matrix", "gen matrix()"), "needs C function names and a reason"),
            (ok.replace("\"rho\"", "\" \""), "needs C function names and a reason"),
        ] {
            let e = format!("{:#}", load_text(dir, &with(&entry)));
            assert!(e.contains(why), "{entry}: {e}");
        }
    }

    #[test]
    fn public_bytes_of_a_secret_key_are_ranges_in_order_with_a_reason() {
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let with = |ranges: &str| {
            let good = GOOD.replace("SHA", &"a".repeat(64)).replace("SRC", "x.c");
            format!("{good}ct_public_sk = [{ranges}]\n")
        };
        let path = dir.join("bad.toml");
        std::fs::write(&path, with("{ from = 0, to = 32, why = \"rho\" }, { from = 64, to = 128, why = \"tr\" }"))
            .unwrap();
        let sub = Submission::load(path.as_str()).unwrap();
        assert_eq!(sub.instances[0].ct_public_sk[1].describe(), "secret key bytes 64..128 (tr)");
        for (ranges, why) in [
            ("{ from = 8, to = 8, why = \"x\" }", "non-empty range with a reason"),
            ("{ from = 0, to = 8, why = \" \" }", "non-empty range with a reason"),
            ("{ from = 0, to = 8, why = \"a\" }, { from = 4, to = 9, why = \"b\" }", "overlaps"),
            ("{ from = 0, to = 8 }", "missing field `why`"),
        ] {
            let e = format!("{:#}", load_text(dir, &with(ranges)));
            assert!(e.contains(why), "{ranges}: {e}");
        }
        let hash = with("{ from = 0, to = 8, why = \"x\" }").replace("id = \"bad\"", "id = \"bad\"\nfamily = \"hash\"");
        let e = format!("{:#}", load_text(dir, &hash.replace("dir = \"d\"", "dir = \"d\"\ndigest_bits = 256")));
        assert!(e.contains("has no secret key for ct"), "{e}");
    }

    #[test]
    fn xof_is_for_hash_functions_and_arch_restricts_builds() {
        use crate::evidence::domain::Arch;
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let good = GOOD.replace("SHA", &"a".repeat(64)).replace("SRC", "x.c");
        let e = format!("{:#}", load_text(dir, &format!("{good}xof = true\n")));
        assert!(e.contains("`xof` applies to hash functions only"), "{e}");
        let path = dir.join("bad.toml");
        let text = good.replacen("[source]", "arch = [\"x86_64\"]\n[source]", 1)
            + "timed = false\n[[instance]]\nlabel = \"A\"\ndir = \"d\"\narch = [\"aarch64\", \"x86_64\"]\n";
        std::fs::write(&path, text).unwrap();
        let sub = Submission::load(path.as_str()).unwrap();
        let (l, a) = (&sub.instances[0], &sub.instances[1]);
        assert!(!l.timed && a.timed && !l.xof);
        assert_eq!(sub.not_built_on(l, Arch::Aarch64).as_deref(), Some("not built: x86-64 only (manifest)"));
        assert_eq!(sub.not_built_on(l, Arch::X86_64), None);
        // An instance's own list wins over the submission's.
        assert_eq!(sub.not_built_on(a, Arch::Aarch64), None);
    }

    /// `link_flags` are linker flags only (`-Wl,...`), refused by name otherwise.
    #[test]
    fn link_flags_are_linker_flags() {
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let good = GOOD.replace("SHA", &"a".repeat(64)).replace("SRC", "x.c");
        for bad in ["-O3", "-Wl,"] {
            let e = format!("{:#}", load_text(dir, &format!("{good}link_flags = [\"{bad}\"]\n")));
            assert!(e.contains("is no `-Wl,...` flag") && e.contains(&format!("{bad:?}")), "{e}");
        }
        let path = dir.join("bad.toml");
        std::fs::write(&path, format!("{good}link_flags = [\"-Wl,--defsym=a=b\"]\n")).unwrap();
        assert_eq!(Submission::load(path.as_str()).unwrap().instances[0].link_flags, ["-Wl,--defsym=a=b"]);
    }

    /// The shipped per-instance restrictions (kem-22's AVX2 and kem-35's AVX2/NEON
    /// variants): each is not built on the other architecture, and the reference
    /// instances beside them are built on both.
    #[test]
    fn shipped_variants_are_restricted_per_instance() {
        use crate::evidence::domain::Arch;
        let cases = [
            ("kem-22", "Mithril-128-avx2", Arch::Aarch64, "not built: x86-64 only (manifest)"),
            ("kem-22", "Mithril-512-avx2", Arch::Aarch64, "not built: x86-64 only (manifest)"),
            ("kem-35", "Scloudplus-128-SHAKE-avx2", Arch::Aarch64, "not built: x86-64 only (manifest)"),
            ("kem-35", "Scloudplus-128-SHAKE-neon", Arch::X86_64, "not built: AArch64 only (manifest)"),
        ];
        for (id, label, off, why) in cases {
            let sub = Submission::load(id).unwrap();
            let inst = sub.instances.iter().find(|i| i.label == label).unwrap();
            assert_eq!(sub.not_built_on(inst, off).as_deref(), Some(why), "{id} {label}");
            let on = if off == Arch::Aarch64 { Arch::X86_64 } else { Arch::Aarch64 };
            assert_eq!(sub.not_built_on(inst, on), None, "{id} {label}");
            assert!(inst.kat_from.is_some(), "{id} {label}: checked against its reference digest");
            let reference = sub.instances.iter().find(|i| Some(&i.label) == inst.kat_from.as_ref()).unwrap();
            assert_eq!(sub.not_built_on(reference, off), None, "{id} {}", reference.label);
        }
    }

    /// `kat_from` names another instance with a KAT of its own; an unknown label, the
    /// instance itself or a chain is a usage error naming the manifest's line.
    #[test]
    fn kat_from_names_an_instance_with_its_own_kat() {
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let good = GOOD.replace("SHA", &"a".repeat(64)).replace("SRC", "{dir}/x.c");
        let with = |a: &str, b: &str| {
            format!(
                "{good}\n[[instance]]\nlabel = \"A\"\ndir = \"d\"\n{a}\n[[instance]]\nlabel = \"B\"\ndir = \"e\"\n{b}"
            )
        };
        let path = dir.join("bad.toml");
        std::fs::write(&path, with("kat_from = \"L\"", "kat_from = \"L\"")).unwrap();
        let sub = Submission::load(path.as_str()).unwrap();
        let (l, a) = (&sub.instances[0], &sub.instances[1]);
        assert_eq!((sub.kat_owner(a).label.as_str(), sub.kat_owner(l).label.as_str()), ("L", "L"));
        assert_eq!(sub.kat_files(a).unwrap()[0].1, "k.txt");
        for (a, b, why, line) in [
            ("kat_from = \"M\"", "", "kat_from = \"M\" names no instance", 20),
            ("kat_from = \"A\"", "", "names the instance itself", 20),
            ("kat_from = \"B\"", "kat_from = \"L\"", "takes its KAT from \"L\" itself", 20),
        ] {
            let e = format!("{:#}", load_text(dir, &with(a, b)));
            assert!(e.contains(why) && e.contains(&format!("bad.toml:{line}:")), "{a} {b}: {e}");
        }
        // The nearest label is suggested.
        let e = format!("{:#}", load_text(dir, &with("kat_from = \"l\"", "")));
        assert!(e.contains("did you mean `L`?"), "{e}");
    }

    /// `[source.limits]` of an archive: read, and refused when zero or past the cap.
    #[test]
    fn archive_limits_are_read_and_checked() {
        let t = tempfile::tempdir().unwrap();
        let dir = camino::Utf8Path::from_path(t.path()).unwrap();
        let good = GOOD.replace("SHA", &"a".repeat(64)).replace("SRC", "x.c");
        let with = |limits: &str| good.replace("[build]", &format!("[source.limits]\n{limits}\n[build]"));
        let path = dir.join("bad.toml");
        std::fs::write(&path, with("max_extract_mib = 8192\nmax_entries = 7")).unwrap();
        let SourceSpec::Archive { limits, .. } = Submission::load(path.as_str()).unwrap().source else { panic!() };
        assert_eq!(limits, Some(ArchiveLimits { max_extract_mib: Some(8192), max_entries: Some(7), max_ratio: None }));
        for (limits, why) in [
            ("max_ratio = 0", "max_ratio = 0 would refuse every archive"),
            ("max_extract_mib = 1048577", "is above 1048576"),
            ("max_mib = 5", "unknown field"),
        ] {
            let e = format!("{:#}", load_text(dir, &with(limits)));
            assert!(e.contains(why), "{limits}: {e}");
        }
    }

    #[test]
    fn expand_replaces_placeholders_and_vars() {
        let inst = Instance {
            label: "L-1".into(),
            dir: "a/b".into(),
            vars: [("ns".to_owned(), "NS1".to_owned())].into(),
            ..Instance::named("L-1")
        };
        assert_eq!(inst.expand("{dir}/x_{label}.c -D{ns}"), "a/b/x_L-1.c -DNS1");
    }
}
