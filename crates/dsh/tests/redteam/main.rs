//! The red-team suite: each attack of the sandbox's threat model performed
//! with real commands through the built `dsh` binary, driven by a scripted
//! model. Every attack must fail to escape. Network attacks talk to
//! 127.0.0.1 only.

#[path = "../common/mod.rs"]
mod common;

mod commands;
mod files;
mod harness;
mod network;
