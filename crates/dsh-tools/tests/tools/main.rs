//! Integration tests of the dsh-tools crate, through its public API only.
//! They start real processes (bash, the sandbox launcher example) and a
//! loopback HTTP server.

mod args;
mod bash;
mod common;
mod files;
mod jobs;
mod limits;
mod misc;
mod read_image;
mod sandbox;
mod search;
mod shell;
mod web;
