//! FerroDDS transports (contract to be written).
#![forbid(unsafe_code)]
