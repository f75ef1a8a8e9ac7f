//! Cross-option validation after parsing: the selected backend's capabilities, address
//! syntax, role and size rules.

use crate::error::OptionError;
use crate::transport::{Capabilities, Support};

use super::model::{
    Options, PubRate, Role, DEFAULT_SCAN_SECONDS, MAX_BOUNDED_SEQ_SIZE, OVERHEAD_BYTES,
};
use super::parse::unsupported;
use super::values::{
    parse_raw_pub_peer, parse_raw_sub_peer, parse_tcp_peer, parse_tls_peer, parse_wan_peer,
    raw_peer_coverage,
};

impl Options {
    pub(super) fn validate(&mut self, caps: &Capabilities) -> Result<(), OptionError> {
        let is_pub = self.role == Role::Publisher;
        // What the selected backend cannot do.
        if let Support::No(reason) = caps.dds_entities {
            let reject = |set: bool, option: &'static str| {
                if set {
                    Err(OptionError::Unsupported { option, reason })
                } else {
                    Ok(())
                }
            };
            reject(self.best_effort, "-bestEffort")?;
            reject(self.keyed, "-keyed")?;
            reject(self.instances.is_some(), "-instances")?;
            reject(self.write_instance.is_some(), "-writeInstance")?;
            reject(self.durability.is_some(), "-durability")?;
            reject(self.use_read_thread, "-useReadThread")?;
            reject(self.asynchronous, "-asynchronous")?;
            reject(self.scan.is_some(), "-scan")?;
            reject(self.thread_cpu_affinity.is_some(), "-threadCPUAffinity")?;
            reject(self.unbounded, "-unbounded")?;
            reject(self.num_publishers > 1, "-numPublishers")?;
            reject(self.pid > 0, "-pidMultiPubTest")?;
        }
        if self
            .thread_cpu_affinity
            .as_ref()
            .is_some_and(|a| !a.database.is_empty())
        {
            return Err(OptionError::Conflict(
                "'-threadCPUAffinity': FerroDDS has no database thread, so the third part (C, RTI's database thread) must be empty: give A:B::D.",
            ));
        }
        if self.no_xml_qos && self.qos_file.is_some() {
            return Err(OptionError::Conflict(
                "'-noXmlQos' uses the QoS profiles compiled into perftest, '-qosFile' a file: give one of them.",
            ));
        }
        if !self.network_capture {
            if self.keep_network_capture {
                return Err(OptionError::Conflict(
                    "'-doNotDropNetworkCapture' keeps the capture '-networkCapture' makes: give '-networkCapture' too.",
                ));
            }
            if self.network_capture_no_user_data {
                return Err(OptionError::Conflict(
                    "'-networkCaptureRemoveUserData' applies to the capture '-networkCapture' makes: give '-networkCapture' too.",
                ));
            }
        }
        if self.data_len > caps.max_data_len {
            return Err(OptionError::DataLenRange {
                data_len: self.data_len,
                min: OVERHEAD_BYTES,
                max: caps.max_data_len,
                mode: caps.data_len_mode,
            });
        }
        if self.multicast && self.no_multicast {
            return Err(OptionError::Conflict(
                "'-multicast' and '-nomulticast' cannot be used together.",
            ));
        }
        if self.raw && self.multicast && !self.peers.is_empty() {
            return Err(OptionError::Conflict(
                "'-multicast' cannot be combined with '-peer' in raw mode: every topic goes to its multicast group (choose the groups with '-multicastAddr').",
            ));
        }
        if let (true, Support::No(reason)) = (self.multicast, caps.multicast) {
            return Err(unsupported("-multicast", reason));
        }
        if let (true, Support::No(reason)) = (self.no_blocking_sockets, caps.non_blocking_sockets) {
            return Err(unsupported("-noBlockingSockets", reason));
        }
        // The address syntax of the backend.
        if self.raw
            && self.transport.as_deref() == Some("SHMEM")
            && (self.nic.is_some() || !self.peers.is_empty())
        {
            return Err(OptionError::Conflict(
                "'-rawTransport -transport SHMEM' runs on this host only: '-nic' and '-peer' are not used with it.",
            ));
        }
        if self.raw {
            if self.tcp_server_port.is_some() {
                return Err(OptionError::Conflict(
                    "'-transportServerBindPort' is not used with -rawTransport: the raw ports follow the RTPS port formula.",
                ));
            }
            if let Some(nic) = &self.nic {
                crate::transport::raw::resolve_nic(nic)?;
            }
            let mut targets = Vec::new();
            for p in &self.peers {
                if is_pub {
                    let (addr, ids) = parse_raw_pub_peer(p)?;
                    targets.extend(ids.into_iter().map(|s| (addr, s)));
                } else {
                    parse_raw_sub_peer(p)?;
                }
            }
            // Explicit peers must reach every subscriber (RTI would run and hang waiting for
            // the ones it never sends to). Without -peer all of them are on 127.0.0.1.
            if is_pub && !targets.is_empty() {
                if let Some(missing) = raw_peer_coverage(&targets, self.num_subscribers) {
                    return Err(OptionError::RawPeersMissSubscriber {
                        missing,
                        num_subscribers: self.num_subscribers,
                    });
                }
            }
        } else {
            let tcp_only = self.transport.as_deref() == Some("TCP");
            let tls = self.transport.as_deref() == Some("TLS");
            let wan = self.transport.as_deref() == Some("UDPv4_WAN");
            for p in &self.peers {
                if wan {
                    parse_wan_peer(p)?;
                } else if tls {
                    parse_tls_peer(p)?;
                } else if tcp_only || (self.enable_tcp && p.parse::<std::net::Ipv4Addr>().is_err())
                {
                    parse_tcp_peer(p)?;
                } else if p.parse::<std::net::Ipv4Addr>().is_err() {
                    return Err(OptionError::BadValue {
                        option: "-peer",
                        value: p.clone(),
                        reason:
                            "FerroDDS takes IPv4 peer addresses (TCP: [N@]tcpv4_lan://ADDR:PORT)",
                    });
                }
            }
            if self.tcp_server_port.is_some() && !tcp_only && !tls && !self.enable_tcp {
                return Err(OptionError::Conflict(
                    "'-transportServerBindPort' needs '-transport TCP', '-transport TLS' or '-enableTCP'.",
                ));
            }
            if !wan && (self.wan_public_address.is_some() || self.wan_host_port.is_some()) {
                return Err(OptionError::Conflict(
                    "'-transportPublicAddress' and '-transportHostPort' need '-transport UDPv4_WAN'.",
                ));
            }
            let shm = self.transport.as_deref() == Some("SHMEM");
            if shm && (self.nic.is_some() || !self.peers.is_empty() || self.multicast) {
                return Err(OptionError::Conflict(
                    "'-transport SHMEM' runs on this host only: discovery goes over UDPv4 on the loopback interface, so '-nic', '-peer' and '-multicast' are not used with it.",
                ));
            }
            if self.enable_shared_memory && (tcp_only || tls || wan || shm) {
                return Err(OptionError::Conflict(
                    "'-enableSharedMemory' adds shared memory beside UDPv4: it cannot be used with '-transport TCP', 'TLS', 'UDPv4_WAN' or 'SHMEM'.",
                ));
            }
            if wan && self.multicast {
                return Err(OptionError::Conflict(
                    "UDPv4_WAN has no multicast ('-multicast' cannot be used with it).",
                ));
            }
            if (tcp_only || tls) && self.multicast {
                return Err(OptionError::Conflict(
                    "'-transport TCP' and 'TLS' have no multicast ('-multicast' and '-multicastAddr' cannot be used with them).",
                ));
            }
        }
        if self.check_consistency && !self.zero_copy && !self.loaning {
            return Err(OptionError::Conflict(
                "'-checkConsistency' checks samples read in place: it can only be used with '-zeroCopy' or '-loaningSendReceive'.",
            ));
        }
        if self.loaning && !self.zero_copy {
            if self.keyed {
                return Err(OptionError::Conflict(
                    "'-loaningSendReceive' cannot be used with '-keyed': FerroDDS's writer loans are for unkeyed types (a loan carries no key hash).",
                ));
            }
            if self.batch_size.is_some_and(|b| b > 0) {
                return Err(OptionError::Conflict(
                    "'-loaningSendReceive' cannot be used with batching: FerroDDS writes each loan as one sample (give '-batchSize 0' or no '-batchSize').",
                ));
            }
        }
        if self.zero_copy {
            if !self.uses_shared_memory() {
                // RTI's message.
                return Err(OptionError::Conflict(
                    "Zero Copy must be run with SHMEM as transport",
                ));
            }
            if self.keyed {
                return Err(OptionError::Conflict(
                    "'-zeroCopy' cannot be used with '-keyed': FerroDDS's writer loans are for unkeyed types (a loan carries no key hash).",
                ));
            }
            if self.batch_size.is_some_and(|b| b > 0) {
                return Err(OptionError::Conflict(
                    "Batching cannot be used with FlatData and/or Zero-Copy ('-zeroCopy' disables batching: give '-batchSize 0' or no '-batchSize').",
                ));
            }
            if self.secure.is_some() {
                return Err(OptionError::Conflict(
                    "'-zeroCopy' cannot be used with DDS Security: FerroDDS sends protected samples through the shared-memory ring, never by reference.",
                ));
            }
            if self.asynchronous {
                return Err(OptionError::Conflict(
                    "'-zeroCopy' cannot be used with '-asynchronous': FerroDDS sends a flow-controlled writer's samples as bytes, never by reference.",
                ));
            }
        }
        if let Some(sec) = &self.secure {
            if sec.governance.is_none() && !sec.has_legacy_flags() {
                return Err(OptionError::Conflict(
                    "DDS Security needs '-secureGovernanceFile' (as RTI Perftest 4.1 and later): one of resource/secure/signed_PerftestGovernance_*.xml, or your own signed governance.",
                ));
            }
            if sec.governance.is_some() && sec.has_legacy_flags() {
                return Err(OptionError::Conflict(
                    "'-secureGovernanceFile' and RTI Perftest 4.0's governance flags ('-secureSign', '-secureEncryptData', '-secureEncryptSM', '-secureEncryptBoth', '-secureEncryptDiscovery') cannot be combined: the flags only name a governance file.",
                ));
            }
        }
        // The TLS files, raw or DDS.
        let tls = self.transport.as_deref() == Some("TLS");
        let files = [&self.tls_ca_file, &self.tls_cert_file, &self.tls_key_file];
        if !tls && files.iter().any(|f| f.is_some()) {
            return Err(OptionError::Conflict(
                "'-transportCertAuthority', '-transportCertFile' and '-transportPrivateKey' need '-transport TLS'.",
            ));
        }
        if tls && files.iter().any(|f| f.is_some()) && !files.iter().all(|f| f.is_some()) {
            return Err(OptionError::Conflict(
                "With your own TLS identity give all of '-transportCertAuthority', '-transportCertFile' and '-transportPrivateKey' (none: the built-in test identity).",
            ));
        }
        if let Some(sizes) = &self.scan {
            let max = *sizes.last().unwrap_or(&self.data_len);
            let threshold = OVERHEAD_BYTES + MAX_BOUNDED_SEQ_SIZE;
            if sizes.iter().any(|&s| s > threshold) && sizes.iter().any(|&s| s <= threshold) {
                return Err(OptionError::Conflict(
                    "'-scan' sizes must all be above or all below the large-data threshold (65498).",
                ));
            }
            self.data_len = max;
            if self.execution_time == 0 {
                self.execution_time = DEFAULT_SCAN_SECONDS;
            }
        }
        if self.latency_test && self.pid != 0 {
            return Err(OptionError::Conflict(
                "Only the publisher with '-pidMultiPubTest 0' can run a latency test.",
            ));
        }
        if self.latency_test && matches!(self.batch_size, Some(b) if b > 0) {
            return Err(OptionError::Conflict(
                "Batching cannot be used in a Latency test ('-latencyTest' with '-batchSize').",
            ));
        }
        if self.data_len > OVERHEAD_BYTES + MAX_BOUNDED_SEQ_SIZE
            && matches!(self.batch_size, Some(b) if b > 0)
        {
            return Err(OptionError::Conflict(
                "Batching cannot be used with Large Data.",
            ));
        }
        if let (Some(w), Some(n)) = (self.write_instance, self.instances) {
            if w >= n {
                return Err(OptionError::Conflict(
                    "'-writeInstance' must be smaller than '-instances'.",
                ));
            }
        } else if matches!(self.write_instance, Some(w) if w > 0) {
            return Err(OptionError::Conflict(
                "'-writeInstance' must be smaller than '-instances'.",
            ));
        }
        if self.instances.is_some_and(|n| n > 1) && !self.keyed {
            return Err(OptionError::Conflict(
                "'-instances' greater than 1 needs '-keyed'.",
            ));
        }
        if self.sid >= self.num_subscribers && is_pub {
            // The publisher does not use -sidMultiSubTest; nothing to check.
        }
        if let Some((bps, method)) = self.pub_rate_bps {
            let rate = bps / (8 * self.data_len);
            if rate == 0 || rate > 10_000_000 {
                return Err(OptionError::BadValue {
                    option: "-pubRatebps",
                    value: format!("{bps}"),
                    reason: "the resulting samples/s must be between 1 and 10000000",
                });
            }
            self.pub_rate = Some(PubRate { rate, method });
        }
        if is_pub {
            let n = self.effective_num_iter();
            let lc = self.effective_latency_count();
            if n < lc {
                return Err(OptionError::NumIterBelowLatencyCount {
                    num_iter: n,
                    latency_count: lc,
                });
            }
        }
        Ok(())
    }
}
