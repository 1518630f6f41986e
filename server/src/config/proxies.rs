//! Which peers may say who the client is (`R2R_TRUSTED_PROXIES`). A forwarded header is a
//! claim made by whoever sent it: the desk reads `X-Forwarded-For` only when the socket peer
//! is a proxy listed here, and then takes the right-most address that is not one of those
//! proxies (what the last trusted proxy saw). Everything to the left of it was written by the
//! client and chooses nothing. Without the setting, the socket peer is the client.

use std::net::IpAddr;

/// The proxies whose `X-Forwarded-For` is believed: addresses and CIDR ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies {
    ranges: Vec<(IpAddr, u8)>,
}

/// IPv4-mapped IPv6 addresses (`::ffff:a.b.c.d`) count as the IPv4 address they carry.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

impl TrustedProxies {
    /// Parses a comma-separated list of addresses and CIDR ranges (`10.0.0.0/8, ::1`).
    pub fn parse(text: &str) -> Result<TrustedProxies, String> {
        let mut ranges = Vec::new();
        for item in text.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (address, prefix) = item.split_once('/').unwrap_or((item, ""));
            let ip: IpAddr = address
                .trim()
                .parse()
                .map_err(|_| format!("{item:?} is not an IP address or CIDR range"))?;
            let ip = canonical(ip);
            let most = if ip.is_ipv4() { 32 } else { 128 };
            let prefix = if prefix.is_empty() {
                most
            } else {
                prefix
                    .trim()
                    .parse::<u8>()
                    .ok()
                    .filter(|p| *p <= most)
                    .ok_or_else(|| format!("{item:?}: a prefix length is 0 to {most}"))?
            };
            ranges.push((ip, prefix));
        }
        Ok(TrustedProxies { ranges })
    }

    /// Whether no proxy is trusted (the socket peer is always the client).
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Whether `ip` is one of the trusted proxies.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        self.ranges
            .iter()
            .any(|(network, prefix)| match (network, ip) {
                (IpAddr::V4(network), IpAddr::V4(ip)) => {
                    let mask = u32::MAX.checked_shl(32 - u32::from(*prefix)).unwrap_or(0);
                    u32::from(*network) & mask == u32::from(ip) & mask
                }
                (IpAddr::V6(network), IpAddr::V6(ip)) => {
                    let mask = u128::MAX.checked_shl(128 - u32::from(*prefix)).unwrap_or(0);
                    u128::from(*network) & mask == u128::from(ip) & mask
                }
                _ => false,
            })
    }

    /// The client of a request that came from `peer` with these `X-Forwarded-For` values (in
    /// the order they arrived): `peer` itself unless it is a trusted proxy; otherwise the
    /// right-most forwarded address that is not a trusted proxy. An entry that is not an
    /// address stops the walk at the last address a trusted proxy vouched for.
    pub fn client<'a>(&self, peer: IpAddr, forwarded: impl Iterator<Item = &'a str>) -> IpAddr {
        let peer = canonical(peer);
        if !self.contains(peer) {
            return peer;
        }
        let entries: Vec<&str> = forwarded.flat_map(|value| value.split(',')).collect();
        let mut client = peer;
        for entry in entries.iter().rev() {
            let Ok(ip) = entry.trim().parse::<IpAddr>() else {
                return client;
            };
            client = canonical(ip);
            if !self.contains(client) {
                return client;
            }
        }
        client
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn only_a_trusted_proxy_names_the_client_and_only_its_right_most_untrusted_entry_counts() {
        let none = TrustedProxies::default();
        assert_eq!(
            none.client(ip("203.0.113.9"), ["10.0.0.1"].into_iter()),
            ip("203.0.113.9"),
            "without trusted proxies the header chooses nothing"
        );
        let proxies = TrustedProxies::parse("127.0.0.1, 10.0.0.0/8, ::1").unwrap();
        // A client that sends its own first entry does not choose its address.
        assert_eq!(
            proxies.client(ip("127.0.0.1"), ["198.51.100.7, 203.0.113.9"].into_iter()),
            ip("203.0.113.9")
        );
        // Proxies in a chain are skipped, header lines are read in order.
        assert_eq!(
            proxies.client(
                ip("10.1.2.3"),
                ["198.51.100.7", "203.0.113.9, 10.4.4.4"].into_iter()
            ),
            ip("203.0.113.9")
        );
        // A peer that is not a proxy is the client, whatever it sends.
        assert_eq!(
            proxies.client(ip("203.0.113.50"), ["10.0.0.1"].into_iter()),
            ip("203.0.113.50")
        );
        // Garbage stops the walk at what a trusted proxy vouched for.
        assert_eq!(
            proxies.client(ip("127.0.0.1"), ["nonsense, 10.9.9.9"].into_iter()),
            ip("10.9.9.9")
        );
        assert_eq!(
            proxies.client(ip("127.0.0.1"), std::iter::empty()),
            ip("127.0.0.1")
        );
        // IPv4-mapped IPv6 is its IPv4 address.
        assert!(proxies.contains(ip("::ffff:10.20.30.40")));
        assert!(!proxies.contains(ip("11.0.0.1")));
        assert!(TrustedProxies::parse("0.0.0.0/0")
            .unwrap()
            .contains(ip("192.0.2.1")));
    }

    #[test]
    fn a_bad_proxy_list_is_refused_with_the_entry() {
        for bad in ["10.0.0.0/33", "proxy.local", "::1/129", "10.0.0.0/x"] {
            let error = TrustedProxies::parse(bad).unwrap_err();
            assert!(error.contains(bad.split('/').next().unwrap()), "{error}");
        }
        assert!(TrustedProxies::parse(" , ").unwrap().is_empty());
    }
}
