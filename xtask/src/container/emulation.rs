//! qemu-user emulation for a foreign architecture, through `binfmt_misc`.

use anyhow::{bail, Context, Result};

use crate::evidence::domain::Arch;

const BINFMT: &str = "/proc/sys/fs/binfmt_misc";

/// Make sure foreign binaries of `arch` run here (registering qemu when allowed).
pub fn ensure_binfmt(arch: Arch) -> Result<()> {
    let name = format!("qemu-{}", arch.uname());
    let enabled =
        || std::fs::read_to_string(format!("{BINFMT}/{name}")).is_ok_and(|s| s.lines().next() == Some("enabled"));
    if enabled() {
        return Ok(());
    }
    let conf_path = format!("/usr/lib/binfmt.d/{name}.conf");
    let how = format!(
        "install the Debian package qemu-user-static, then as root: \
         `mount -t binfmt_misc binfmt_misc {BINFMT}` (if not mounted) and \
         `grep -v '^#' {conf_path} > {BINFMT}/register`"
    );
    let conf = std::fs::read_to_string(&conf_path)
        .with_context(|| format!("{arch:?} binaries cannot run on this host: {how}"))?;
    let line =
        conf.lines().find(|l| l.starts_with(':')).with_context(|| format!("{conf_path} has no registration line"))?;
    if !std::path::Path::new(&format!("{BINFMT}/register")).exists() {
        let sh = xshell::Shell::new()?;
        if xshell::cmd!(sh, "mount -t binfmt_misc binfmt_misc {BINFMT}").quiet().run().is_err() {
            bail!("cannot mount binfmt_misc to run {arch:?} binaries: {how}");
        }
        // The kernel may have had the interpreter all along; the mount shows it.
        if enabled() {
            return Ok(());
        }
    }
    match std::fs::write(format!("{BINFMT}/register"), line) {
        Ok(()) => crate::note!("registered the {name} binfmt interpreter from {conf_path}"),
        // Registered meanwhile (or disabled): what counts is whether it is enabled.
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) && enabled() => {}
        Err(e) => bail!("cannot register the {name} interpreter (needs root): {how}: {e}"),
    }
    Ok(())
}

/// True when `arch` code runs natively here.
pub fn native(arch: Arch) -> bool {
    arch == Arch::host()
}
