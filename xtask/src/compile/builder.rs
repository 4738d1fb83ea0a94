//! Building instances: the prepared build environment (engine, image, sandbox) and
//! cached builds keyed by every input that decides them. Shared by verify and bench.
//!
//! ```text
//! <cache>/builds/<id>/<key>/build.json   the host's record: plan, every output's digest
//! <cache>/builds/<id>/<key>/out/         the build's own folder, the only one its steps write
//! ```
//!
//! No sandbox ever sees `<key>/`, only `out/` (writable while its own build runs,
//! read-only afterwards). The host reads `out/` without following links, and reuses a
//! build only when every file in it still has the digest the record holds.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::Serialize;
use xshell::Shell;

use crate::compile::inputs;
use crate::compile::options::Inputs;
use crate::compile::recipe::{self, Places, Plan, Step};
use crate::container::engine::Backend;
use crate::container::sandbox::{DiskGuard, Job, Limits, Mount, Outcome, Sandbox};
use crate::evidence::domain::Arch;
use crate::evidence::schema::{BuildRecord, ImageLock, StepFailure, ToolchainRecord};
use crate::evidence::Layout;

/// Most files a build may leave (its folder is listed and digested file by file).
const MAX_FILES: u64 = 100_000;
use crate::compile::iccs::{self, IccsApi};
use crate::compile::sources::{self, Source};
use crate::compile::submission::{Instance, Submission};
use crate::container::systems::SystemProfile;
use crate::container::toolchain::Toolchain;
use crate::{container::emulation, container::image, project};

impl ToolchainRecord {
    pub fn from_lock(lock: &ImageLock, engine: Backend) -> ToolchainRecord {
        ToolchainRecord {
            toolchain: lock.toolchain.clone(),
            pinned: true,
            engine,
            arch: lock.arch,
            emulated: !emulation::native(lock.arch),
            image: Some(lock.tag.clone()),
            image_id: Some(lock.image_id.clone()),
            rootfs_sha256: lock.rootfs_sha256.clone(),
            gcc_version: lock.gcc_version.clone(),
            cmake_version: lock.cmake_version.clone(),
            packages: Some(lock.package_digest()),
        }
    }
}

/// A prepared place to build in: engine, image and its lock.
#[derive(Clone)]
pub struct BuildEnv {
    pub backend: Backend,
    pub arch: Arch,
    pub lock: Option<ImageLock>,
    /// The cores its containers may run on (a campaign step's share); None: any.
    pub cpus: Option<Vec<usize>>,
}

impl BuildEnv {
    pub fn prepare(sh: &Shell, backend: Backend, toolchain: &str, arch: Arch) -> Result<BuildEnv> {
        let lock = match backend {
            Backend::Container(engine) => {
                let tc = Toolchain::load(toolchain)?;
                Some(image::ensure(sh, engine, &tc, arch, None, false)?)
            }
            Backend::Host => {
                if arch != Arch::host() {
                    bail!("--engine host cannot build for {}: the host is {}", arch.uname(), Arch::host().uname());
                }
                None
            }
        };
        Ok(BuildEnv { backend, arch, lock, cpus: None })
    }

    /// The analysis environment beside this one (`ct`): the same engine and
    /// architecture, in the toolchain's analysis image.
    pub fn analysis(&self, sh: &Shell) -> Result<BuildEnv> {
        let (Backend::Container(engine), Some(base)) = (self.backend, &self.lock) else {
            bail!("ct needs a container engine: valgrind is pinned in the toolchain's analysis image");
        };
        let tc = Toolchain::load(&base.toolchain)?;
        let lock = image::ensure_analysis(sh, engine, &tc, base)?;
        Ok(BuildEnv { backend: self.backend, arch: self.arch, lock: Some(lock), cpus: self.cpus.clone() })
    }

    pub fn sandbox(&self, limits: Limits) -> Sandbox {
        // qemu-user translates into executable anonymous memory: an emulated image's
        // sandboxes allow it.
        let jit = !emulation::native(self.arch);
        let cpus = self.cpus.clone();
        Sandbox { backend: self.backend, image: self.lock.as_ref().map(|l| l.tag.clone()), limits, jit, cpus }
    }

    /// The record of this toolchain, with version lines read inside the sandbox.
    pub fn record(&self, sh: &Shell, sb: &Sandbox) -> Result<ToolchainRecord> {
        let gcc_version = sb.version_line(sh, "gcc")?;
        let cmake_version = sb.version_line(sh, "cmake").unwrap_or_else(|_| "cmake: not installed".into());
        if let Some(lock) = &self.lock {
            if gcc_version != lock.gcc_version || cmake_version != lock.cmake_version {
                bail!(
                    "image {} changed since it was checked: run `cargo xtask image check {}`",
                    lock.tag,
                    lock.toolchain
                );
            }
        }
        Ok(match &self.lock {
            Some(lock) => ToolchainRecord::from_lock(lock, self.backend),
            None => ToolchainRecord {
                toolchain: crate::container::engine::HOST_TOOLCHAIN.into(),
                pinned: false,
                engine: self.backend,
                arch: self.arch,
                emulated: false,
                image: None,
                image_id: None,
                rootfs_sha256: None,
                gcc_version,
                cmake_version,
                packages: None,
            },
        })
    }

    /// Identifies the compilers for build reuse.
    fn identity(&self, tc: &ToolchainRecord) -> String {
        match &self.lock {
            Some(l) => format!("image {}", l.image_id),
            None => format!("host {} / {}", tc.gcc_version, tc.cmake_version),
        }
    }
}

impl BuildRecord {
    /// SHA-256 of a step's output, when the build made it as a regular file.
    pub fn output_sha256(&self, name: &str) -> Option<&str> {
        self.files.get(name).and_then(|f| f.strip_prefix("file "))
    }

    /// The digest of the program that runs `driver`'s code: its own, or the one
    /// program's when `driver` is one of its modes and that mode built.
    pub fn program_sha256(&self, driver: &str) -> Option<&str> {
        match self.plan.modes.get(driver) {
            Some(mode) => self.output_sha256(&format!("mode-{mode}.o")).and(self.output_sha256(recipe::PROGRAM)),
            None => self.output_sha256(driver),
        }
    }
}

/// A finished build of one instance.
pub struct Build {
    pub record: BuildRecord,
    pub reused: bool,
    /// Why an earlier build with the same key was not reused.
    pub rebuilt_because: Option<String>,
    /// The build's own folder on the host.
    pub out: Utf8PathBuf,
    /// Held while the build is in use.
    _lock: KeyLock,
}

pub enum Built {
    Ok(Build),
    /// A required step failed; its combined output (bounded).
    Failed {
        plan: Plan,
        key: String,
        log: String,
    },
}

/// Everything a build of one submission needs, resolved once per run.
#[derive(Clone, Copy)]
pub struct BuildCtx<'a> {
    pub sh: &'a Shell,
    pub env: &'a BuildEnv,
    pub tc: &'a ToolchainRecord,
    pub sb: &'a Sandbox,
    pub sub: &'a Submission,
    pub src: &'a Source,
    /// `--rebuild` and `--build-timeout`.
    pub inputs: &'a Inputs,
}

/// Host folder of a submission's builds; never mounted itself.
pub fn work_dir(sub: &Submission) -> Utf8PathBuf {
    project::cache_dir().join("builds").join(&sub.id)
}

impl BuildCtx<'_> {
    fn places(&self) -> Places {
        Places::new(self.env.backend, &self.src.root, self.env.arch)
    }

    /// The build key `inst` has now.
    pub fn key_of(&self, inst: &Instance) -> Result<String> {
        self.build_key(&recipe::plan(self.sub, inst, self.src, &self.places())?)
    }

    /// Build `inst`, or reuse the build with the same key when its files are unchanged.
    pub fn ensure(&self, inst: &Instance) -> Result<Built> {
        self.ensure_plan(inst, recipe::plan(self.sub, inst, self.src, &self.places())?)
    }

    /// The profiling variant of `inst` (`recipe::profile_plan`), built like any other.
    pub fn ensure_profile(&self, inst: &Instance) -> Result<Built> {
        self.ensure_plan(inst, recipe::profile_plan(self.sub, inst, self.src, &self.places())?)
    }

    /// The constant-time variant of `inst` (`recipe::ct_plan`), built like any other.
    pub fn ensure_ct(&self, inst: &Instance) -> Result<Built> {
        self.ensure_plan(inst, recipe::ct_plan(self.sub, inst, self.src, &self.places())?)
    }

    /// The sanitizer variant of `inst` (`recipe::sanitize_plan`), built like any other.
    pub fn ensure_sanitized(&self, inst: &Instance) -> Result<Built> {
        self.ensure_plan(inst, recipe::sanitize_plan(self.sub, inst, self.src, &self.places())?)
    }

    fn ensure_plan(&self, inst: &Instance, plan: Plan) -> Result<Built> {
        let key = self.build_key(&plan)?;
        let work = work_dir(self.sub);
        std::fs::create_dir_all(&work).with_context(|| format!("cannot create {work}"))?;
        // Named by the key alone: instances with identical build steps share one build.
        let dir = work.join(&key[..20]);
        let lock = KeyLock::exclusive(&work.join(format!("{}.lock", &key[..20])))?;
        let mut rebuilt_because = None;
        if !self.inputs.rebuild {
            match reusable(&dir.join("build.json"), &dir.join("out"), &key) {
                Ok(Some(record)) => {
                    let out = dir.join("out");
                    return Ok(Built::Ok(Build { record, reused: true, rebuilt_because, out, _lock: lock.share()? }));
                }
                Ok(None) => {}
                Err(why) => rebuilt_because = Some(why),
            }
        }
        // Under the exclusive lock, any unfinished folder of this key is a dead run's.
        remove_unfinished(&work, &key[..20]);
        let tmp = work.join(format!("{}.tmp-{}", &key[..20], std::process::id()));
        let built = self.build_into(&tmp, inst, (plan, key));
        let record = match built {
            Ok(Ok(record)) => record,
            Ok(Err(failed)) => {
                std::fs::remove_dir_all(&tmp).ok();
                return Ok(failed);
            }
            Err(e) => {
                // Interrupted or no engine: an unfinished build is neither sealed nor kept.
                std::fs::remove_dir_all(&tmp).ok();
                return Err(e);
            }
        };
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("cannot remove the old build {dir}"))?;
        }
        std::fs::rename(&tmp, &dir).with_context(|| format!("cannot move the new build into {dir}"))?;
        let out = dir.join("out");
        Ok(Built::Ok(Build { record, reused: false, rebuilt_because, out, _lock: lock.share()? }))
    }

    /// Build into `tmp` (`tmp/src`: the inputs the build may see; `tmp/out`: its own
    /// folder) and write the record there. `Ok(Err)` is a failed build.
    fn build_into(
        &self,
        tmp: &Utf8Path,
        inst: &Instance,
        (plan, key): (Plan, String),
    ) -> Result<std::result::Result<BuildRecord, Built>> {
        let (inputs, out) = (tmp.join("src"), tmp.join("out"));
        std::fs::create_dir_all(&out).with_context(|| format!("cannot create {out}"))?;
        let mut log = String::new();
        let mut seen_digests = BTreeMap::new();
        if self.env.backend == Backend::Host && !self.sub.iccs_files(inst).is_empty() {
            bail!("{}: the official ICCS files are given to container builds only", self.sub.id);
        }
        if self.env.backend != Backend::Host {
            let Some(seen) = self.assemble(tmp, inst, &plan, &mut log)? else {
                return Ok(Err(Built::Failed { plan, key, log }));
            };
            seen_digests = copy_inputs(&self.src.root, &seen.files, &inputs)?;
            self.copy_iccs(inst, &inputs)?;
        }
        let mut optional_failures = Vec::new();
        let (mut failed, mut missing) = (false, Vec::new());
        for step in &plan.steps {
            // A later step does without what a failed optional step did not make (the
            // one program links the modes that built).
            let mut step = step.clone();
            step.argv.retain(|a| !missing.contains(a));
            if let Err(step_log) = self.run_step(&step, (&inputs, &out), &mut log)? {
                if !step.optional {
                    failed = true;
                    break;
                }
                missing.extend(step.output.clone());
                optional_failures.push(StepFailure { what: step.what.clone(), log: step_log });
            }
        }
        std::fs::remove_dir_all(&inputs).ok();
        // Whatever the steps left, failed or not, is taken back before anything else;
        // what cannot be taken back or listed is no build.
        let files = seal(&out).and_then(|()| listing(&out));
        if let Err(e) = &files {
            log.push_str(&format!("the build left files the harness does not accept: {e:#}\n"));
        }
        let files = match files {
            Ok(files) if !failed => files,
            _ => return Ok(Err(Built::Failed { plan, key, log })),
        };
        let record = BuildRecord {
            schema: crate::evidence::schema::version::<BuildRecord>(),
            key,
            plan,
            inputs: seen_digests,
            files,
            optional_failures,
            finished: project::now_utc(),
        };
        if let Some(why) = self.shipped_output(&record)?.or_else(|| missing_output(&record)) {
            log.push_str(&why);
            return Ok(Err(Built::Failed { plan: record.plan, key: record.key, log }));
        }
        crate::evidence::schema::write(&tmp.join("build.json"), &record)?;
        Ok(Ok(record))
    }

    /// What the build of `inst` sees: the tree without its KAT data, to the dependency
    /// pass in a sandbox of its own; then the files the manifest names and the pass
    /// listed. None: the pass failed (its output is in `log`).
    fn assemble(
        &self,
        tmp: &Utf8Path,
        inst: &Instance,
        plan: &Plan,
        log: &mut String,
    ) -> Result<Option<inputs::BuildInputs>> {
        let view = inputs::view(self.sub, self.src)?;
        log.push_str(&view.not_regular_lines());
        let listed = match inputs::dependency_pass(plan) {
            None => None,
            Some(pass) => {
                let (tree, out) = (tmp.join("view"), tmp.join("view-out"));
                std::fs::create_dir_all(&out).with_context(|| format!("cannot create {out}"))?;
                copy_inputs(&self.src.root, &view.files, &tree)?;
                self.copy_iccs(inst, &tree)?;
                let ran = self.run_step(&pass, (&tree, &out), log);
                std::fs::remove_dir_all(&tree).ok();
                let listing = ran?.map_err(drop).and_then(|()| {
                    project::read_regular(&out.join(inputs::LISTING), inputs::LISTING_MAX).map_err(|e| {
                        log.push_str(&format!("the dependency pass left no listing the harness reads: {e:#}\n"))
                    })
                });
                std::fs::remove_dir_all(&out).ok();
                let Ok(listing) = listing else { return Ok(None) };
                Some(inputs::listed(&String::from_utf8_lossy(&listing)))
            }
        };
        let seen = inputs::select(self.sub, inst, self.src, self.env.arch, &view, listed.as_ref())?;
        log.push_str(&seen.account(&view));
        Ok(Some(seen))
    }

    /// The official ICCS files a manifest takes, into the build's inputs.
    fn copy_iccs(&self, inst: &Instance, inputs: &Utf8Path) -> Result<()> {
        let Some(api) = self.src.iccs.as_ref().filter(|_| !self.sub.iccs_files(inst).is_empty()) else {
            return Ok(());
        };
        let dest = inputs.join(recipe::ICCS_DIR);
        if std::fs::symlink_metadata(&dest).is_ok() {
            // The tree itself has a folder of that name: its files are not the official ones.
            bail!("{}: the source tree has a folder {} of its own", self.sub.id, recipe::ICCS_DIR);
        }
        let files = api.files()?.into_iter().collect();
        api.check_copies(&copy_inputs(&api.dir, &files, &dest)?)
    }

    /// Run one build step in a fresh sandbox that can write only `out`. `Ok(Err(log))`
    /// is a failed step; `Err` an engine failure or an interruption.
    fn run_step(
        &self,
        step: &Step,
        (inputs, out): (&Utf8Path, &Utf8Path),
        log: &mut String,
    ) -> Result<std::result::Result<(), String>> {
        let (workdir, mounts) = match self.env.backend {
            Backend::Container(_) => (
                Utf8PathBuf::from(recipe::BUILD),
                vec![
                    Mount { host: inputs.to_owned(), guest: recipe::SRC, writable: false },
                    Mount { host: project::drivers_dir(), guest: recipe::DRIVERS, writable: false },
                    Mount { host: out.to_owned(), guest: recipe::BUILD, writable: true },
                ],
            ),
            Backend::Host => (out.to_owned(), vec![]),
        };
        let disk = DiskGuard { dir: out.to_owned(), max_bytes: self.inputs.build_disk_mib << 20, max_files: MAX_FILES };
        let timeout = self.build_timeout();
        let job =
            Job { argv: step.argv.clone(), workdir, mounts, timeout, disk: Some(disk), stdin: None, own_init: false };
        let (f, stdout) = self.sb.run_captured(self.sh, &job, 1 << 20)?;
        let start = log.len();
        log.push_str(&format!("$ {}\n", step.argv.join(" ")));
        log.push_str(&project::printable(&String::from_utf8_lossy(&stdout)));
        log.push_str(&f.stderr);
        if f.outcome.success() {
            return Ok(Ok(()));
        }
        let why = match f.outcome {
            Outcome::TimedOut => format!("timed out after {} s", self.inputs.build_timeout),
            Outcome::DiskLimit => format!(
                "wrote more than {} MiB or {MAX_FILES} files into its build folder (--build-disk-mib)",
                self.inputs.build_disk_mib
            ),
            other => other.to_string(),
        };
        log.push_str(&format!("{} failed: {why}\n", step.what));
        Ok(Err(log[start..].to_owned()))
    }

    /// An output the build copied from the source tree instead of compiling it.
    fn shipped_output(&self, record: &BuildRecord) -> Result<Option<String>> {
        for name in record.plan.steps.iter().filter_map(|s| s.output.as_deref()) {
            if let Some(sha) = record.output_sha256(name) {
                if let Some(path) = self.src.shipped_file(sha)? {
                    return Ok(Some(format!(
                        "{name} is the file {path} of the source tree, byte for byte: it was not built by the \
                         pinned toolchain\n"
                    )));
                }
            }
        }
        Ok(None)
    }

    fn build_timeout(&self) -> Duration {
        Duration::from_secs(self.inputs.build_timeout)
    }

    /// Inputs that decide a build; equal keys mean the earlier build can be reused.
    fn build_key(&self, plan: &Plan) -> Result<String> {
        Ok(build_key(&KeyInputs {
            compilers: self.env.identity(self.tc),
            source: self.src.provenance.digest(),
            patches: &self.src.patches,
            drivers: recipe::drivers_digest()?,
            plan,
        }))
    }
}

/// Everything that decides a build. The plan names no output folder (steps run in
/// the build's own folder), so a key never depends on where the build lands.
#[derive(Debug, Serialize)]
pub struct KeyInputs<'a> {
    pub compilers: String,
    pub source: &'a str,
    pub patches: &'a [sources::PatchRecord],
    pub drivers: String,
    pub plan: &'a Plan,
}

pub fn build_key(inputs: &KeyInputs) -> String {
    project::sha256_hex(serde_json::to_string(inputs).expect("plain data serialises").as_bytes())
}

/// The record of an earlier build with `key` whose files are all unchanged; `Ok(None)`
/// when there is none; `Err(why)` when there is one that must not be reused.
fn reusable(record_path: &Utf8Path, out: &Utf8Path, key: &str) -> Result<Option<BuildRecord>, String> {
    if !record_path.exists() {
        return Ok(None);
    }
    let record: BuildRecord =
        crate::evidence::schema::read(record_path).map_err(|e| format!("{e:#}"))?.ok_or("no build record")?;
    if record.key != key {
        return Err(format!("{record_path} belongs to another build"));
    }
    let now = listing(out).map_err(|e| format!("cannot read the earlier build: {e:#}"))?;
    let changed: Vec<&String> =
        record.files.keys().chain(now.keys()).filter(|f| record.files.get(*f) != now.get(*f)).take(5).collect();
    if !changed.is_empty() {
        let names: Vec<&str> = changed.iter().map(|s| s.as_str()).collect();
        return Err(format!("the earlier build's files changed since it was built ({})", names.join(", ")));
    }
    Ok(Some(record))
}

/// A required step whose output is not a regular file.
fn missing_output(record: &BuildRecord) -> Option<String> {
    record.plan.steps.iter().filter(|s| !s.optional).find_map(|step| {
        let name = step.output.as_ref()?;
        record.output_sha256(name).is_none().then(|| format!("{}: the step left no regular file {name}\n", step.what))
    })
}

/// Copy `files` (relative to `root`) into the fresh folder `dest`, never through a link.
/// Copy `files` of `root` under `dest`; the SHA-256 of each copy, taken from the bytes
/// as they are written (what the sandbox reads is what is recorded).
fn copy_inputs(
    root: &Utf8Path,
    files: &std::collections::BTreeSet<String>,
    dest: &Utf8Path,
) -> Result<BTreeMap<String, String>> {
    std::fs::create_dir_all(dest).with_context(|| format!("cannot create {dest}"))?;
    let mut digests = BTreeMap::new();
    for rel in files {
        let to = dest.join(rel);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("cannot create {parent}"))?;
        }
        let from = project::open_regular(&root.join(rel))?;
        let file = std::fs::File::create(&to).with_context(|| format!("cannot create {to}"))?;
        let (sha256, _) = project::copy_hashing(from, file, &root.join(rel))?;
        digests.insert(rel.clone(), sha256);
    }
    Ok(digests)
}

/// Remove the folders an interrupted or killed run left while building `key`.
fn remove_unfinished(work: &Utf8Path, key: &str) {
    let prefix = format!("{key}.tmp-");
    for entry in work.read_dir_utf8().into_iter().flatten().flatten() {
        if entry.file_name().starts_with(&prefix) {
            std::fs::remove_dir_all(entry.path()).ok();
        }
    }
}

pub use crate::lock::KeyLock;

/// Take a finished build folder back from the sandbox: owned by the tool (when it runs
/// as root), no set-id, sticky or group/other-write bits, so that nothing a build
/// leaves can be run with its rights or changed later by anyone but the tool.
fn seal(out: &Utf8Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    for entry in walkdir::WalkDir::new(out).max_open(64) {
        let entry = entry.with_context(|| format!("cannot walk {out}"))?;
        let ft = entry.file_type();
        if ft.is_symlink() {
            continue;
        }
        if root {
            std::os::unix::fs::lchown(entry.path(), Some(0), Some(0))
                .with_context(|| format!("cannot take back {}", entry.path().display()))?;
        }
        let mode = entry.metadata()?.permissions().mode();
        let sealed = if ft.is_dir() { 0o755 } else { mode & 0o755 };
        std::fs::set_permissions(entry.path(), std::fs::Permissions::from_mode(sealed))?;
    }
    Ok(())
}

/// Every file below `dir`, never following a link.
fn listing(dir: &Utf8Path) -> Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1).max_open(64).sort_by_file_name() {
        let entry = entry.with_context(|| format!("cannot walk {dir}"))?;
        let path = Utf8Path::from_path(entry.path()).with_context(|| {
            format!("a file name that is not UTF-8: {}", String::from_utf8_lossy(entry.file_name().as_encoded_bytes()))
        })?;
        if files.len() as u64 >= MAX_FILES {
            bail!("more than {MAX_FILES} files");
        }
        let rel = path.strip_prefix(dir).unwrap_or(path).to_string();
        if !entry.file_type().is_dir() {
            files.insert(rel, project::entry_kind(path, entry.file_type())?);
        }
    }
    Ok(files)
}

impl Build {
    /// A job that runs a program of this build (`argv[0]` relative to the build folder)
    /// with the build read-only and nothing writable but its private /tmp. No source
    /// tree: a program that could read the shipped KAT text could print it.
    /// The job that runs `argv` (a driver's program and its words) on this build. A
    /// driver that is a mode of the build's one program runs as that program with no
    /// argument, its mode and words on stdin's first line (what the caller feeds
    /// follows it).
    pub fn run_job(&self, backend: Backend, argv: &[String], timeout: Duration) -> Job {
        let (program, mode) = self.record.plan.program_of(&argv[0]);
        let stdin = mode.map(|m| {
            let words: Vec<&str> = std::iter::once(m).chain(argv[1..].iter().map(String::as_str)).collect();
            format!("{}\n", words.join(" ")).into_bytes()
        });
        let mut argv = if mode.is_some() { vec![program.to_owned()] } else { argv.to_vec() };
        match backend {
            Backend::Container(_) => {
                argv[0] = Utf8Path::new(recipe::BUILD).join(&argv[0]).to_string();
                let mounts = vec![Mount { host: self.out.clone(), guest: recipe::BUILD, writable: false }];
                Job { argv, workdir: "/tmp".into(), mounts, timeout, disk: None, stdin, own_init: false }
            }
            Backend::Host => {
                argv[0] = self.out.join(&argv[0]).to_string();
                Job { argv, workdir: self.out.clone(), mounts: vec![], timeout, disk: None, stdin, own_init: false }
            }
        }
    }

    /// `argv` as records show it and the trial runner takes it: the program's path and
    /// arguments, then, for a mode of the one program, `<` and its stdin's first line.
    pub fn command(&self, backend: Backend, argv: &[String]) -> Vec<String> {
        let job = self.run_job(backend, argv, Duration::ZERO);
        let mut shown = job.argv;
        if let Some(line) = job.stdin {
            shown.push("<".into());
            shown.extend(String::from_utf8_lossy(&line).split_whitespace().map(str::to_owned));
        }
        shown
    }
}

/// What a command resolves once: the system profile, the engine and its checked image,
/// and where the evidence goes. A campaign shares one across all its steps.
#[derive(Clone)]
pub struct RunCtx {
    pub profile: SystemProfile,
    pub env: BuildEnv,
    pub layout: Layout,
}

/// A command's run context and the submissions it works on, with their sources.
pub struct Prepared {
    pub ctx: RunCtx,
    pub work: Vec<(Submission, Source)>,
}

/// The source given for submission `id`: its `ID=` entry, else the plain one.
pub fn given_for(given: &[crate::compile::options::Given], id: &str) -> Option<Utf8PathBuf> {
    let named = given.iter().find(|g| g.id.as_deref() == Some(id));
    // A plain --archive is the one selected submission's, never the ICCS API package.
    let plain = || given.iter().find(|g| g.id.is_none() && id != iccs::ID);
    named.or_else(plain).map(|g| g.path.clone())
}

impl Inputs {
    /// Load the submissions, run `check` on each, and obtain their sources before any
    /// image work (a missing archive fails at once); then select the engine and image.
    pub fn prepare(&self, sh: &Shell, check: impl Fn(&Submission) -> Result<()>) -> Result<Prepared> {
        let profile = SystemProfile::load(&self.system)?;
        let work = self.obtain(sh, &profile, check)?;
        Ok(Prepared { ctx: self.context(sh, profile)?, work })
    }

    /// Engine, image and evidence layout for `profile`.
    pub fn context(&self, sh: &Shell, profile: SystemProfile) -> Result<RunCtx> {
        let backend = Backend::select(sh, self.target.engine)?;
        let arch = profile.arch(self.target.arch);
        let env = BuildEnv::prepare(sh, backend, &profile.toolchain(&self.toolchain), arch)?;
        Ok(RunCtx { layout: Layout::new(&self.out, &profile.evidence_name(arch)), profile, env })
    }

    /// The submissions these inputs name (else the profile's campaign set), checked,
    /// with their sources; every plan is checked against its tree.
    pub fn obtain(
        &self,
        sh: &Shell,
        profile: &SystemProfile,
        check: impl Fn(&Submission) -> Result<()>,
    ) -> Result<Vec<(Submission, Source)>> {
        let ids = profile.ids(&self.ids);
        self.check_given(&ids)?;
        self.check_paths()?;
        Toolchain::load(&profile.toolchain(&self.toolchain))?;
        let limits = self.extract_limits();
        let arch = profile.arch(self.target.arch);
        let subs = ids.iter().map(|id| Submission::load(id)).collect::<Result<Vec<_>>>()?;
        crate::compile::submission::check_selection(&self.instances, &subs)?;
        self.check_host(&subs)?;
        for sub in &subs {
            check(sub)?;
        }
        let subs = self.only_built_on(subs, arch);
        self.check_archives(&subs)?;
        let mut work = Vec::new();
        for sub in subs {
            let overrides = sources::Overrides {
                archive: given_for(&self.archive, &sub.id),
                source_dir: given_for(&self.source_dir, &sub.id),
                limits,
                arch,
            };
            let mut src = sources::obtain(sh, &sub, &overrides)
                .with_context(|| format!("cannot obtain the sources of {}", sub.id))?;
            if sub.takes_iccs() {
                let limits = crate::compile::extract::ExtractLimits::resolve(&limits, None);
                let api = IccsApi::obtain(given_for(&self.archive, iccs::ID).as_deref(), limits)
                    .with_context(|| format!("{} takes files of the ICCS API package", sub.id))?;
                src = src.with_iccs(api);
            }
            for inst in sub.instances.iter().filter(|i| self.selects(i)) {
                recipe::check(&sub, inst, &src, arch)?;
            }
            work.push((sub, src));
        }
        Ok(work)
    }

    /// The selected instances that build on `arch`: the others are said (`not built:
    /// x86-64 only (manifest)`) and dropped, with any submission left with none. A
    /// manifest's restriction is no failure, and needs neither archive nor image.
    fn only_built_on(&self, subs: Vec<Submission>, arch: crate::evidence::domain::Arch) -> Vec<Submission> {
        let mut kept = Vec::new();
        for mut sub in subs {
            let had = sub.instances.iter().any(|i| self.selects(i));
            let (built, not): (Vec<_>, Vec<_>) =
                std::mem::take(&mut sub.instances).into_iter().partition(|i| sub.not_built_on(i, arch).is_none());
            for inst in not.iter().filter(|i| self.selects(i)) {
                let why = sub.not_built_on(inst, arch).unwrap_or_default();
                crate::say!("{} {}: {why}, on {}", sub.id, inst.label, arch.uname());
            }
            sub.instances = built;
            if !had || sub.instances.iter().any(|i| self.selects(i)) {
                kept.push(sub);
            }
        }
        kept
    }

    /// Every `--archive` and `--source-dir` names a selected submission; the plain
    /// form only when one is selected; never both for one submission.
    pub fn check_given(&self, ids: &[String]) -> Result<()> {
        for g in self.archive.iter().chain(&self.source_dir) {
            match &g.id {
                None if ids.len() != 1 => {
                    return crate::ui::usage(format!(
                        "{} is given for no submission, and {} are selected ({}): write ID={}",
                        g.path,
                        ids.len(),
                        ids.join(" "),
                        g.path
                    ))
                }
                Some(id) if !ids.iter().any(|i| submission_id(i) == id) && id != iccs::ID => {
                    return crate::ui::usage(format!(
                        "--archive/--source-dir name {id}, which is not selected (selected: {})",
                        ids.join(" ")
                    ))
                }
                _ => {}
            }
        }
        for id in ids {
            if given_for(&self.archive, id).is_some() && given_for(&self.source_dir, id).is_some() {
                return crate::ui::usage(format!("{id}: give --archive or --source-dir, not both"));
            }
        }
        Ok(())
    }

    /// `--engine host` runs a submission's code unsandboxed: any source but a pinned
    /// crate (an archive, a `--source-dir`) needs `--unsandboxed-host` too.
    pub fn check_host(&self, subs: &[Submission]) -> Result<()> {
        let untrusted: Vec<&str> = subs
            .iter()
            .filter(|s| given_for(&self.source_dir, &s.id).is_some() || !s.source.is_pinned_crate())
            .map(|s| s.id.as_str())
            .collect();
        Backend::check_host(self.target.engine, self.unsandboxed_host, &untrusted)
    }

    /// Every missing archive at once, before anything is extracted or built.
    /// A submission with no instance left to build here (`arch`) needs no archive.
    pub fn check_archives(&self, subs: &[Submission]) -> Result<()> {
        self.check_nested(subs)?;
        let missing: Vec<String> = self.missing_archives(subs).into_iter().map(|m| format!("  - {m}")).collect();
        if missing.is_empty() {
            return Ok(());
        }
        crate::ui::usage(format!(
            "{} archive(s) missing:\n{}\n{}",
            missing.len(),
            missing.join("\n"),
            sources::SUPPLY_ARCHIVES
        ))
    }
}

/// The id a selection names: a manifest file's stem, or the id itself.
pub fn submission_id(given: &str) -> &str {
    if given.ends_with(".toml") {
        return Utf8Path::new(given).file_stem().unwrap_or(given);
    }
    given
}

impl Inputs {
    /// A submission whose code sits in an archive this tool does not extract (a nested
    /// rar) runs only from a folder given by `--source-dir`: refused before anything else.
    fn check_nested(&self, subs: &[Submission]) -> Result<()> {
        let built = |s: &&Submission| !s.instances.is_empty() && given_for(&self.source_dir, &s.id).is_none();
        let refusals: Vec<String> = subs.iter().filter(built).filter_map(Submission::nested_refusal).collect();
        if refusals.is_empty() {
            return Ok(());
        }
        crate::ui::usage(refusals.join("\n"))
    }

    /// Every missing archive, one line each (file, size, SHA-256, page, where looked).
    pub fn missing_archives(&self, subs: &[Submission]) -> Vec<String> {
        subs.iter().filter_map(|s| self.missing_archive(s)).chain(self.missing_iccs(subs)).collect()
    }

    /// The archive `sub` needs and nobody gave; none when nothing of it is built here.
    pub fn missing_archive(&self, sub: &Submission) -> Option<String> {
        if sub.instances.is_empty() || given_for(&self.source_dir, &sub.id).is_some() {
            return None;
        }
        sources::missing_archive(sub, given_for(&self.archive, &sub.id).as_deref())
    }

    /// The ICCS API package, when a selected manifest takes its files and it is missing.
    pub fn missing_iccs(&self, subs: &[Submission]) -> Option<String> {
        let users: Vec<&str> = subs.iter().filter(|s| s.takes_iccs()).map(|s| s.id.as_str()).collect();
        if users.is_empty() {
            return None;
        }
        let pin = iccs::Pin::load().ok()?;
        let why = pin.missing(given_for(&self.archive, iccs::ID).as_deref())?;
        Some(format!("{} need(s) {why} (--archive {}=PATH)", users.join(", "), iccs::ID))
    }

    /// `--source-dir` is a folder and `--out` can be written, before any work starts.
    fn check_paths(&self) -> Result<()> {
        for dir in self.source_dir.iter().map(|g| &g.path) {
            if !dir.is_dir() {
                return crate::ui::usage(format!("--source-dir {dir} is not a folder"));
            }
        }
        crate::ui::check_out_dir(&self.out)?;
        std::fs::create_dir_all(&self.out).with_context(|| format!("--out {}: cannot create it", self.out))?;
        tempfile::tempfile_in(&self.out).with_context(|| format!("--out {}: cannot write there", self.out))?;
        Ok(())
    }

    pub fn selects(&self, inst: &Instance) -> bool {
        self.selects_label(&inst.label)
    }

    pub fn selects_label(&self, label: &str) -> bool {
        self.instances.is_empty() || self.instances.iter().any(|l| l == label)
    }

    /// The sandbox limits these flags ask for.
    pub fn limits(&self) -> Limits {
        let cap = self.output_cap_mib.unwrap_or(DEFAULT_OUTPUT_CAP_MIB);
        Limits { memory: self.memory.clone(), output_cap_bytes: cap << 20, ..Limits::default() }
    }

    /// The limits of one instance's KAT run: its manifest's output cap unless the
    /// command line gives one.
    pub fn limits_for(&self, inst: &Instance) -> Limits {
        let cap = self.output_cap_mib.or(inst.output_cap_mib).unwrap_or(DEFAULT_OUTPUT_CAP_MIB);
        Limits { output_cap_bytes: cap << 20, ..self.limits() }
    }
}

/// Most output kept of one sandboxed command, in MiB, unless a flag or manifest says.
pub const DEFAULT_OUTPUT_CAP_MIB: u64 = 256;

impl Inputs {
    /// One instance's KAT time limit: `--timeout`, else its manifest's, else 600 s.
    pub fn kat_timeout(flag: Option<u64>, inst: &Instance) -> u64 {
        flag.or(inst.timeout).unwrap_or(crate::compile::options::KAT_TIMEOUT_SECS)
    }
}
