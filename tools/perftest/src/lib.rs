//! placeholder
#![forbid(unsafe_code)]
pub mod error;
pub mod options;
pub mod output;
pub mod stats;
