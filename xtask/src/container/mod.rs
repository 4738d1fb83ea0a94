//! The container layer: engines (podman, docker), pinned images and toolchains, one
//! command in a fresh sandbox, emulation of foreign architectures, interruption.

pub mod cores;
pub mod emulation;
pub mod engine;
pub mod hostcpu;
pub mod image;
pub mod interrupt;
pub mod sandbox;
pub mod systems;
pub mod toolchain;
