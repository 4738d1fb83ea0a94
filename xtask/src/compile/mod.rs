//! What a compile needs, from the manifest to the build: manifests, obtaining and
//! extracting sources (cached trees with the host's record of their files), plans (the
//! exact compiler command lines), builds in the sandbox and the build cache. (Not named
//! `build`: tools and ignore templates take a folder of that name for output.)

pub mod archives;
pub mod builder;
pub mod extract;
pub mod iccs;
pub mod inputs;
pub mod options;
pub mod recipe;
pub mod sources;
pub mod submission;
pub mod trees;
