//! The model budget (`R2R_SPEND_*`).

use super::{whole_in, ConfigError, Environment};

/// The model budget (`R2R_SPEND_PER_CALL`, `R2R_SPEND_TOTAL`, `R2R_SPEND_PER_BUG` in dollars;
/// `R2R_SPEND_CALLS_PER_HOUR`, `R2R_SPEND_CLIENT_CALLS_PER_HOUR`,
/// `R2R_SPEND_UNCONFIRMED_PERCENT`).
pub fn budget(env: &Environment) -> Result<domain::spend::Budget, ConfigError> {
    Ok({
        let defaults = domain::spend::Budget::default();
        let dollars = |name: &str, default: u64| -> Result<u64, ConfigError> {
            match env.get(name) {
                None => Ok(default),
                Some(text) => domain::spend::parse_dollars(text).ok_or_else(|| {
                    ConfigError::new(
                        name,
                        format!("expected a dollar amount such as 0.03 or 5, got {text:?}"),
                    )
                }),
            }
        };
        let count = |name: &str, default: u32| -> Result<u32, ConfigError> {
            match env.get(name) {
                None => Ok(default),
                Some(text) => text
                    .trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| {
                        ConfigError::new(
                            name,
                            format!("expected a positive whole number, got {text:?}"),
                        )
                    }),
            }
        };
        domain::spend::Budget {
            per_call: dollars("R2R_SPEND_PER_CALL", defaults.per_call)?,
            total: dollars("R2R_SPEND_TOTAL", defaults.total)?,
            per_bug: dollars("R2R_SPEND_PER_BUG", defaults.per_bug)?,
            calls_per_hour: count("R2R_SPEND_CALLS_PER_HOUR", defaults.calls_per_hour)?,
            client_calls_per_hour: count(
                "R2R_SPEND_CLIENT_CALLS_PER_HOUR",
                defaults.client_calls_per_hour,
            )?,
            unconfirmed_percent: whole_in(
                env,
                "R2R_SPEND_UNCONFIRMED_PERCENT",
                1,
                100,
                i64::from(defaults.unconfirmed_percent),
                "the percent of the budget and of the hourly calls that bugs nobody \
             confirmed or promoted may take together",
            )?
            .try_into()
            .unwrap_or(defaults.unconfirmed_percent),
        }
    })
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, Environment};

    #[test]
    fn the_unconfirmed_share_defaults_to_half_and_a_bad_value_is_named() {
        let config = Config::from_env(&Environment::default(), None).unwrap();
        assert_eq!(config.spend.unconfirmed_percent, 50);
        let set = Environment::from_pairs([("R2R_SPEND_UNCONFIRMED_PERCENT", "20")]);
        assert_eq!(
            Config::from_env(&set, None)
                .unwrap()
                .spend
                .unconfirmed_percent,
            20
        );
        for bad in ["0", "101", "half", "-5", "50%"] {
            let set = Environment::from_pairs([("R2R_SPEND_UNCONFIRMED_PERCENT", bad)]);
            let error = Config::from_env(&set, None).unwrap_err();
            assert!(
                error.to_string().contains("R2R_SPEND_UNCONFIRMED_PERCENT"),
                "{bad:?}: {error}"
            );
        }
    }
}
