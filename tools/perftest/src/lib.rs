//! placeholder
#![forbid(unsafe_code)]
pub mod error;
pub mod harness;
pub mod message;
pub mod options;
pub mod output;
pub mod run;
pub mod stats;
pub mod system;
pub mod transport;
