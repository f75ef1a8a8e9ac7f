//! Command-line options with RTI Perftest syntax.
//!
//! Options start with a single dash and match **case-insensitively by prefix**; when a
//! prefix fits several options, the first one in byte order of the canonical names wins
//! (so `-d` is `-dataLen` and `-do` is `-doNotDropNetworkCapture`, as in RTI Perftest).
//! `-help` and `-h` must be spelled out. A value never starts with `-`. Numbers are read
//! like `scanf("%llu")`: leading digits count, trailing junk is ignored, no digits is an
//! error. Everything is driven by [`OPTIONS`], a table sorted in byte order.
//!
//! # Module map
//!
//! * `table` — the option table ([`OPTIONS`]: names, arity, role group, help),
//!   [`lookup`] by prefix and the `-help` text.
//! * `model` — the parsed [`Options`] and its value types, defaults and the protocol
//!   size constants.
//! * `values` — value parsers (`scanf`-style numbers, rates, priorities, core lists,
//!   `-scan` sizes, raw-transport peers).
//! * `parse` — [`Options::parse`]: walks the arguments through the table and applies
//!   each option's value to the model.
//! * `validate` — cross-option checks after parsing (mode, role and size rules).
//! * `plan` — the run policy derived from the options: effective defaults, sizes,
//!   [`BatchingState`] and the initial burst.

mod model;
mod parse;
mod plan;
mod table;
mod validate;
mod values;

pub use model::*;
pub use plan::*;
pub use table::*;
pub use values::*;

#[cfg(test)]
mod tests;
