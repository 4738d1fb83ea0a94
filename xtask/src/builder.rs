//! Building instances: the prepared build environment (engine, image, sandbox) and
//! cached builds keyed by every input that decides them. Shared by verify and bench.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::Serialize;
use xshell::Shell;

use crate::engine::{Backend, Limits, Mount, Sandbox};
use crate::evidence::Layout;
use crate::flags::{Arch, Inputs};
use crate::recipe::{self, Plan};
use crate::sources::{self, Source};
use crate::submission::{Instance, Submission};
use crate::systems::SystemProfile;
use crate::toolchain::{ImageLock, Toolchain};
use crate::{emulation, image, project};

/// The toolchain a run used, as every record states it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolchainRecord {
    /// The spec name, or `host (unpinned)`.
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
}

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
        }
    }
}

/// A prepared place to build in: engine, image and its lock.
pub struct BuildEnv {
    pub backend: Backend,
    pub arch: Arch,
    pub lock: Option<ImageLock>,
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
        Ok(BuildEnv { backend, arch, lock })
    }

    /// Start a sandbox with the source tree, drivers and build folder mounted.
    pub fn sandbox(&self, sh: &Shell, sub: &Submission, src: &Utf8Path, limits: &Limits) -> Result<Sandbox> {
        let work = work_dir(sub);
        let mounts = vec![
            Mount { host: src.to_owned(), guest: recipe::SRC, writable: false },
            Mount { host: project::root().join("drivers"), guest: recipe::DRIVERS, writable: false },
            Mount { host: work, guest: recipe::WORK, writable: true },
        ];
        Sandbox::start(sh, self.backend, self.lock.as_ref().map(|l| l.tag.as_str()), mounts, limits)
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
                toolchain: "host (unpinned)".into(),
                pinned: false,
                engine: self.backend,
                arch: self.arch,
                emulated: false,
                image: None,
                image_id: None,
                rootfs_sha256: None,
                gcc_version,
                cmake_version,
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

/// A finished build of one instance.
pub struct Build {
    pub plan: Plan,
    pub key: String,
    pub reused: bool,
    /// The build folder on the host.
    pub host_dir: Utf8PathBuf,
}

pub enum Built {
    Ok(Build),
    /// The plan's steps failed; the combined compiler output.
    Failed {
        plan: Plan,
        key: String,
        log: String,
    },
}

/// Host folder of a submission's builds, mounted at /work.
pub fn work_dir(sub: &Submission) -> Utf8PathBuf {
    project::cache_dir().join("builds").join(&sub.id)
}

/// Build `inst` unless a build with the same key exists (or `rebuild`).
#[allow(clippy::too_many_arguments)]
pub fn ensure(
    sh: &Shell,
    env: &BuildEnv,
    tc: &ToolchainRecord,
    sb: &Sandbox,
    sub: &Submission,
    inst: &Instance,
    src: &Source,
    rebuild: bool,
) -> Result<Built> {
    let key = build_key(env, tc, sub, inst, src, sb)?;
    // Named by the key alone: instances with identical build steps share one build.
    let dir_name = key[..20].to_owned();
    let plan = recipe::plan(sub, inst, src, sb, &dir_name)?;
    let host_dir = work_dir(sub).join(&dir_name);
    let marker = host_dir.join("build.json");
    if marker.exists() && !rebuild {
        return Ok(Built::Ok(Build { plan, key, reused: true, host_dir }));
    }
    std::fs::remove_dir_all(&host_dir).ok();
    std::fs::create_dir_all(&host_dir)?;
    if let Err(log) = run_steps(sh, sb, &plan) {
        return Ok(Built::Failed { plan, key, log });
    }
    project::write_json(&marker, &plan)?;
    Ok(Built::Ok(Build { plan, key, reused: false, host_dir }))
}

/// Run the plan's build steps; on failure the combined compiler output.
pub fn run_steps(sh: &Shell, sb: &Sandbox, plan: &Plan) -> std::result::Result<(), String> {
    let mut log = String::new();
    for step in &plan.steps {
        log.push_str(&format!("$ {}\n", step.argv.join(" ")));
        match sb.exec(sh, Utf8Path::new(&plan.workdir), &step.argv, Duration::from_secs(1800)) {
            Ok(exec) => {
                log.push_str(&String::from_utf8_lossy(&exec.stdout));
                log.push_str(&String::from_utf8_lossy(&exec.stderr));
                if !exec.outcome.success() {
                    log.push_str(&format!("{} failed: {}\n", step.what, exec.outcome));
                    return Err(log);
                }
            }
            Err(e) => {
                log.push_str(&format!("{e:#}\n"));
                return Err(log);
            }
        }
    }
    Ok(())
}

/// Inputs that decide a build; equal keys mean the earlier build can be reused.
fn build_key(
    env: &BuildEnv,
    tc: &ToolchainRecord,
    sub: &Submission,
    inst: &Instance,
    src: &Source,
    sb: &Sandbox,
) -> Result<String> {
    let plan = recipe::plan(sub, inst, src, sb, "BUILD")?;
    let key = serde_json::json!({
        "compilers": env.identity(tc),
        "source": src.provenance.digest(),
        "patches": src.patches,
        "drivers": recipe::driver_digests(sub)?,
        "steps": plan.steps,
    });
    Ok(project::sha256_hex(key.to_string().as_bytes()))
}

/// The submissions of a run with their sources, the system profile, and the prepared
/// build environment.
pub struct Prepared {
    pub profile: SystemProfile,
    pub work: Vec<(Submission, Source)>,
    pub env: BuildEnv,
    pub layout: Layout,
}

impl Inputs {
    /// Load the submissions, run `check` on each, and obtain their sources before any
    /// image work (a missing archive fails at once); then select the engine and image.
    pub fn prepare(&self, sh: &Shell, check: impl Fn(&Submission) -> Result<()>) -> Result<Prepared> {
        if (self.archive.is_some() || self.source_dir.is_some()) && self.ids.len() != 1 {
            bail!("--archive and --source-dir apply to one submission at a time");
        }
        let profile = SystemProfile::load(&self.system)?;
        let overrides = sources::Overrides { archive: self.archive.clone(), source_dir: self.source_dir.clone() };
        let mut work = Vec::new();
        for id in &self.ids {
            let sub = Submission::load(id)?;
            check(&sub)?;
            let src = sources::obtain(sh, &sub, &overrides)
                .with_context(|| format!("cannot obtain the sources of {}", sub.id))?;
            work.push((sub, src));
        }
        let backend = Backend::select(sh, self.target.engine)?;
        let env = BuildEnv::prepare(sh, backend, &profile.toolchain(&self.toolchain), profile.arch(self.target.arch))?;
        Ok(Prepared { layout: Layout::new(&self.out, &self.system), profile, work, env })
    }

    pub fn selects(&self, inst: &Instance) -> bool {
        self.instances.is_empty() || self.instances.contains(&inst.label)
    }
}
