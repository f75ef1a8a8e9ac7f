//! DDS Security 1.1 builtin plugins for FerroDDS (layer 3 of the architecture).
//!
//! # Contract
//!
//! * [`auth`]: `DDS:Auth:PKI-DH` — identity certificates validated against the identity CA, the
//!   sans-IO handshake (request / reply / final; time and randomness are inputs), the shared
//!   secret and challenges.
//! * [`access`]: `DDS:Access:Permissions` — governance and permissions documents, S/MIME-signed
//!   by the permissions CA and verified, and the rules they grant.
//! * [`crypto`]: `DDS:Crypto:AES-GCM-GMAC` — key material, session keys and the payload,
//!   submessage and RTPS-message transforms with their inverses, in caller-provided buffers
//!   (no allocation per sample).
//! * [`engine`]: [`engine::BuiltinSecurity`], the adapter of `auth` and `access` that the RTPS
//!   engine calls (`ferrodds_rtps::security::ParticipantSecurity`): tokens, handshake over the
//!   stateless topic, validation of remote permissions; with `rtps_protection_kind` SIGN or
//!   ENCRYPT, the participant key material, the key exchange on the volatile-secure topic
//!   (KxKeys) and the RTPS message transforms.
//! * [`generic_message`]: `DataHolder` tokens and the `ParticipantGenericMessage` carried on the
//!   stateless and volatile-secure builtin topics.
//!
//! Every error is typed and names what was wrong; nothing here panics on input from the network
//! or from files.
#![forbid(unsafe_code)]

pub mod access;
pub mod auth;
pub mod crypto;
pub mod engine;
pub mod generic_message;
