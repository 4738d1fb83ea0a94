//! Container engines: selection, and every difference between podman and docker in
//! one place (in the manner of cross's `EngineType`). Every engine call goes through
//! [`Engine::call_output`], which runs the engine in its own process group (so a
//! terminal's Ctrl-C reaches only xtask, which then decides) and adds the command line
//! and the engine's stderr to any error. The sandbox itself is in `sandbox.rs`.

use std::process::{Command, Output};

use anyhow::{bail, Context, Result};
use camino::Utf8Path;
use serde::Deserialize;
use xshell::{cmd, Shell};

use crate::evidence::domain::{Arch, EngineChoice};

pub use crate::evidence::domain::Engine;

pub use crate::evidence::domain::Backend;

/// What every record of the host backend says its toolchain is.
pub const HOST_TOOLCHAIN: &str = "host (unpinned, unsandboxed)";

/// The flag by which an operator says a submission's code may run on the host.
pub const UNSANDBOXED_HOST: &str = "--unsandboxed-host";

/// Where commands run: which engine, which architecture.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub engine: EngineChoice,
    /// None: the system profile's, else the host's.
    pub arch: Option<Arch>,
}

impl Target {
    pub fn arch(&self) -> Arch {
        self.arch.unwrap_or_else(Arch::host)
    }
}

impl Backend {
    /// The backend `choice` names. `auto` is podman, else docker, and never the host:
    /// without a working engine it fails (exit 3) with doctor's words, before anything
    /// is built.
    pub fn select(sh: &Shell, choice: EngineChoice) -> Result<Backend> {
        if choice != EngineChoice::Host {
            return Engine::select(sh, choice).map(Backend::Container);
        }
        crate::warning!(
            "WARNING: --engine host: building and running with the host's unpinned compilers, as uid {}, \
             without any sandbox; every record says `toolchain: {HOST_TOOLCHAIN}`.",
            // SAFETY: geteuid has no preconditions.
            unsafe { libc::geteuid() }
        );
        Ok(Backend::Host)
    }

    /// Refuse (exit 2, before anything runs) `--engine host` for `untrusted`, the
    /// submissions whose source is not a pinned crate, unless the operator gave
    /// [`UNSANDBOXED_HOST`]; that flag means nothing with another engine.
    pub fn check_host(choice: EngineChoice, acknowledged: bool, untrusted: &[&str]) -> Result<()> {
        let host = choice == EngineChoice::Host;
        if acknowledged && !host {
            return crate::ui::usage(format!(
                "{UNSANDBOXED_HOST} goes with --engine host only: it allows an archive's or a folder's code to \
                 run on the host"
            ));
        }
        if host && !acknowledged && !untrusted.is_empty() {
            return crate::ui::usage(format!(
                "--engine host would build and run the code of {} (an archive or a folder, not a pinned crate) \
                 on this machine, as you and without any sandbox. Give {UNSANDBOXED_HOST} as well if that is \
                 what you mean; otherwise use podman or docker (`cargo xtask doctor` says what to install)",
                untrusted.join(", ")
            ));
        }
        Ok(())
    }
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Backend::Container(e) => f.write_str(e.program()),
            Backend::Host => f.write_str("host"),
        }
    }
}

/// A container's state as the engine reports it (`inspect --format {{json .State}}`);
/// both engines use these names.
#[derive(Debug, Clone, Deserialize)]
pub struct State {
    #[serde(rename = "ExitCode")]
    pub exit_code: i32,
    #[serde(rename = "OOMKilled", default)]
    pub oom_killed: bool,
    #[serde(rename = "Error", default)]
    pub error: String,
    #[serde(rename = "StartedAt", default)]
    pub started_at: String,
}

impl State {
    /// A container that never started has the zero time; its exit code is the
    /// engine's, not the command's.
    pub fn started(&self) -> bool {
        !self.started_at.is_empty() && !self.started_at.starts_with("0001-")
    }
}

impl Engine {
    /// In the order `--engine auto` tries them.
    pub const ALL: [Engine; 2] = [Engine::Podman, Engine::Docker];

    pub fn program(self) -> &'static str {
        match self {
            Engine::Podman => "podman",
            Engine::Docker => "docker",
        }
    }

    /// The Debian packages of the engine and of what its sandboxes need.
    pub fn packages(self) -> &'static str {
        match self {
            Engine::Podman => "podman runc catatonit uidmap",
            Engine::Docker => "docker.io tini",
        }
    }

    /// The init of every sandbox (`run --init`, so no child outlives its command), and
    /// its package.
    pub fn init(self) -> (&'static Utf8Path, &'static str) {
        match self {
            Engine::Podman => (Utf8Path::new("/usr/libexec/podman/catatonit"), "catatonit"),
            Engine::Docker => (Utf8Path::new("/usr/bin/docker-init"), "tini"),
        }
    }

    /// How to start an installed engine that does not answer; None when it has no
    /// daemon (podman: then installing its packages is the fix).
    pub fn start_command(self) -> Option<String> {
        match self {
            Engine::Podman => None,
            Engine::Docker if Utf8Path::new("/run/systemd/system").exists() => Some("systemctl start docker".into()),
            Engine::Docker => Some("dockerd --iptables=false --bridge=none > /var/log/dockerd.log 2>&1 &".into()),
        }
    }

    /// The OCI runtime the tool asks for (see `global_args`), when it asks for one.
    pub fn runtime(self) -> Option<&'static str> {
        match self {
            Engine::Podman => Some("runc"),
            Engine::Docker => None,
        }
    }

    /// Whether the engine run by a user other than root maps ids with newuidmap
    /// (docker's daemon runs as root).
    pub fn rootless_maps_ids(self) -> bool {
        self == Engine::Podman
    }

    /// Global flags. This host family needs runc: crun fails on hybrid cgroups.
    fn global_args(self) -> Vec<String> {
        match self {
            Engine::Podman => match std::env::var("NGCC_PODMAN_RUNTIME") {
                Ok(rt) if rt == "default" => vec![],
                Ok(rt) if !rt.is_empty() => vec!["--runtime".into(), rt],
                _ if which("runc") => vec!["--runtime".into(), "runc".into()],
                _ => vec![],
            },
            Engine::Docker => vec![],
        }
    }

    /// Remove a container at once, killing whatever runs in it.
    pub fn remove_args(self, name: &str) -> Vec<String> {
        match self {
            Engine::Podman => vec!["rm".into(), "-f".into(), "-t".into(), "0".into(), name.into()],
            Engine::Docker => vec!["rm".into(), "-f".into(), name.into()],
        }
    }

    /// Flags that keep a read-only container to the tmpfs mounts the tool names (podman
    /// would add exec-able /run and /var/tmp).
    pub fn read_only_args(self) -> Vec<String> {
        match self {
            Engine::Podman => vec!["--read-only".into(), "--read-only-tmpfs=false".into()],
            Engine::Docker => vec!["--read-only".into()],
        }
    }

    /// The seccomp profile every sandbox starts from, and the package that installs it:
    /// containers-common's default, podman's own. Docker reads the same format; its
    /// built-in default is not on disk, so docker gets this one too.
    pub fn seccomp_default(self) -> (&'static Utf8Path, &'static str) {
        match self {
            Engine::Podman | Engine::Docker => {
                (Utf8Path::new("/usr/share/containers/seccomp.json"), "golang-github-containers-common")
            }
        }
    }

    /// A host folder or file mounted into a container. Podman mounts it `nodev`; docker's
    /// `--volume` has no such option (its device cgroup still refuses every device node
    /// but its defaults, and the sandbox user cannot create one).
    pub fn volume_arg(self, host: &Utf8Path, guest: &str, writable: bool) -> String {
        let mode = if writable { "rw" } else { "ro" };
        match self {
            Engine::Podman => format!("--volume={host}:{guest}:{mode},nodev"),
            Engine::Docker => format!("--volume={host}:{guest}:{mode}"),
        }
    }

    /// Flags that keep the host's `/etc/hosts` and `/etc/resolv.conf` out of a container
    /// (both engines copy them in, `--network=none` or not). Podman 4 refuses `--dns=none`
    /// beside `--network=none` (measured) and docker has neither that nor `--no-hosts`:
    /// an empty file of the tool's is mounted over the file, and the engine then adds none.
    pub fn no_host_files_args(self, empty: &Utf8Path) -> Vec<String> {
        let over = |guest| self.volume_arg(empty, guest, false);
        match self {
            Engine::Podman => vec!["--no-hosts".into(), over("/etc/resolv.conf")],
            Engine::Docker => vec![over("/etc/hosts"), over("/etc/resolv.conf")],
        }
    }

    /// The flag that sets an imported image's architecture.
    pub fn import_arch_arg(self, arch: Arch) -> String {
        match self {
            Engine::Podman => format!("--arch={}", arch.debian()),
            Engine::Docker => format!("--platform=linux/{}", arch.debian()),
        }
    }

    /// Whether the memory limit killed the container's command. Podman 4 with runc does
    /// not set `OOMKilled` for `run`, but conmon leaves an empty `oom` file in the working
    /// directory of the podman client (measured); docker sets `OOMKilled`.
    pub fn out_of_memory(self, state: &State, client_dir: &Utf8Path) -> bool {
        state.oom_killed || (self == Engine::Podman && client_dir.join("oom").exists())
    }

    /// The flag that puts a container under a cgroup of the tool's (`hostcpu.rs`).
    pub fn cgroup_parent_args(self, parent: &str) -> Vec<String> {
        vec![format!("--cgroup-parent={parent}")]
    }

    /// Sub-cgroups of the parent that hold the engine's own processes, not the
    /// container's: podman puts conmon in `<parent>/conmon` (measured, podman 4.3 with
    /// cgroupfs); docker's shim stays in containerd's cgroup.
    pub fn cgroup_helpers(self) -> &'static [&'static str] {
        match self {
            Engine::Podman => &["conmon"],
            Engine::Docker => &[],
        }
    }

    /// Why a plain cgroup path cannot be the parent, if so: with the systemd manager
    /// (driver) both engines want a slice, which this tool does not create. Asked once.
    pub fn cgroup_parent_unsupported(self, sh: &Shell) -> Option<String> {
        static ASKED: std::sync::Mutex<Vec<(Engine, Option<String>)>> = std::sync::Mutex::new(Vec::new());
        let mut asked = ASKED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((_, why)) = asked.iter().find(|(e, _)| *e == self) {
            return why.clone();
        }
        let format = match self {
            Engine::Podman => "{{.Host.CgroupManager}}",
            Engine::Docker => "{{.CgroupDriver}}",
        };
        let why = match self.call(sh, &["info".into(), "--format".into(), format.into()]) {
            Ok(m) if m.trim() == "cgroupfs" => None,
            Ok(m) => Some(format!("the engine's cgroup manager is {}, not cgroupfs", m.trim())),
            Err(e) => Some(format!("cannot ask the engine for its cgroup manager: {e:#}")),
        };
        asked.push((self, why.clone()));
        why
    }

    fn probe(self, sh: &Shell) -> Result<Engine> {
        self.call(sh, &["info".into()]).map(|_| self)
    }

    /// The container engine `choice` names, when it answers; `host` names none (exit 2).
    pub fn select(sh: &Shell, choice: EngineChoice) -> Result<Engine> {
        match choice {
            EngineChoice::Podman => Engine::Podman.named(sh),
            EngineChoice::Docker => Engine::Docker.named(sh),
            EngineChoice::Auto => Engine::auto(sh),
            EngineChoice::Host => {
                crate::ui::usage("--engine host: this command needs a container engine (podman or docker)")
            }
        }
    }

    /// The engine `--engine` names, when it answers.
    fn named(self, sh: &Shell) -> Result<Engine> {
        let program = self.program();
        self.probe(sh).with_context(|| {
            format!("--engine {program} does not work here; `cargo xtask doctor --engine {program}` says what to fix")
        })
    }

    /// The first engine of [`Engine::ALL`] that answers, else [`NoEngine`] (the command
    /// line adds what `doctor` finds missing: `doctor::explain`).
    fn auto(sh: &Shell) -> Result<Engine> {
        match Engine::ALL.into_iter().find(|e| e.probe(sh).is_ok()) {
            Some(engine) => Ok(engine),
            None => Err(NoEngine.into()),
        }
    }

    /// The state of a container.
    pub fn state(self, sh: &Shell, name: &str) -> Result<State> {
        let json = self.call(sh, &["inspect".into(), "--format".into(), "{{json .State}}".into(), name.into()])?;
        serde_json::from_str(json.trim())
            .with_context(|| format!("unexpected `{} inspect` output: {json}", self.program()))
    }

    /// The one way to call the engine: stdout on success, the full command line and
    /// stderr on failure.
    pub fn call(self, sh: &Shell, args: &[String]) -> Result<String> {
        let out = self.call_output(sh, args)?;
        if !out.status.success() {
            bail!(
                "`{}` failed ({}):\n{}",
                self.command_line(args),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim_end()
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// Like [`call`](Self::call), but a non-zero exit is returned, not an error.
    pub fn call_output(self, sh: &Shell, args: &[String]) -> Result<Output> {
        self.command(sh, args).output().with_context(|| format!("cannot start `{}`", self.command_line(args)))
    }

    /// The engine command line, in its own process group, not yet started.
    pub fn command(self, sh: &Shell, args: &[String]) -> Command {
        use std::os::unix::process::CommandExt;
        let program = self.program();
        let global = self.global_args();
        crate::detail!("$ {}", self.command_line(args));
        let mut command: Command = cmd!(sh, "{program} {global...} {args...}").into();
        command.process_group(0);
        command
    }

    pub fn command_line(self, args: &[String]) -> String {
        let mut all = vec![self.program().to_owned()];
        all.extend(self.global_args());
        all.extend(args.iter().cloned());
        all.join(" ")
    }

    /// The image ID of a tag, or None when the engine has no such image.
    pub fn image_id(self, sh: &Shell, tag: &str) -> Result<Option<String>> {
        let out =
            self.call_output(sh, &["image".into(), "inspect".into(), "--format".into(), "{{.Id}}".into(), tag.into()])?;
        if !out.status.success() {
            return Ok(None);
        }
        let id = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        Ok(Some(id.strip_prefix("sha256:").unwrap_or(&id).to_owned()))
    }
}

pub fn which(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
}

/// No engine answered under `--engine auto`.
#[derive(Debug)]
pub struct NoEngine;

impl std::fmt::Display for NoEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no working container engine, and --engine auto never falls back to the host: nothing was built")
    }
}

impl std::error::Error for NoEngine {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_round_trips_as_a_plain_name() {
        for (b, s) in [
            (Backend::Container(Engine::Podman), "\"podman\""),
            (Backend::Container(Engine::Docker), "\"docker\""),
            (Backend::Host, "\"host\""),
        ] {
            assert_eq!(serde_json::to_string(&b).unwrap(), s);
            assert_eq!(serde_json::from_str::<Backend>(s).unwrap(), b);
        }
    }

    #[test]
    fn the_host_takes_a_source_other_than_a_pinned_crate_only_when_told() {
        use crate::ui::{exit, exit_code};
        let check = |choice, ack, untrusted: &[&str]| Backend::check_host(choice, ack, untrusted);
        check(EngineChoice::Host, false, &[]).expect("the pinned crates need no acknowledgement");
        let e = check(EngineChoice::Host, false, &["kem-07", "kem-03"]).unwrap_err();
        assert_eq!(exit_code(&e), exit::USAGE);
        assert!(format!("{e}").contains("kem-07, kem-03") && format!("{e}").contains(UNSANDBOXED_HOST), "{e}");
        check(EngineChoice::Host, true, &["kem-07"]).expect("acknowledged");
        check(EngineChoice::Auto, false, &["kem-07"]).expect("a container is the sandbox");
        let e = check(EngineChoice::Podman, true, &[]).unwrap_err();
        assert_eq!(exit_code(&e), exit::USAGE, "the flag means nothing with an engine: {e}");
    }

    #[test]
    fn a_container_that_never_started_is_told_apart() {
        let never: State = serde_json::from_str(
            r#"{"Status":"created","OOMKilled":false,"ExitCode":0,"Error":"","StartedAt":"0001-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert!(!never.started());
        let ran: State =
            serde_json::from_str(r#"{"ExitCode":127,"StartedAt":"2026-11-30T06:23:08.98581027Z"}"#).unwrap();
        assert!(ran.started());
        assert_eq!(ran.exit_code, 127);
    }

    #[test]
    fn engine_specific_flags_live_here() {
        assert_eq!(Engine::Podman.import_arch_arg(Arch::Aarch64), "--arch=arm64");
        assert_eq!(Engine::Docker.import_arch_arg(Arch::X86_64), "--platform=linux/amd64");
        assert_eq!(Engine::Docker.remove_args("c"), ["rm", "-f", "c"]);
        assert_eq!(Engine::Podman.volume_arg("/h".into(), "/src", false), "--volume=/h:/src:ro,nodev");
        assert_eq!(Engine::Docker.volume_arg("/h".into(), "/b", true), "--volume=/h:/b:rw");
        let e = Utf8Path::new("/c/empty");
        assert_eq!(Engine::Podman.no_host_files_args(e), ["--no-hosts", "--volume=/c/empty:/etc/resolv.conf:ro,nodev"]);
        assert_eq!(
            Engine::Docker.no_host_files_args(e),
            ["--volume=/c/empty:/etc/hosts:ro", "--volume=/c/empty:/etc/resolv.conf:ro"]
        );
    }
}
