//! Usage and cost (dsh's extension): token counts per model request,
//! cumulated per turn and per session, priced from a table per model;
//! the `session.usage` notification, the `session/usage` request and the
//! per-prompt budget.
//!
//! Token counts come from the provider's own figures as recorded in
//! `assistant/message.usage`: `cacheHitTokens` are the prompt tokens
//! served from DeepSeek's context cache (`prompt_cache_hit_tokens`, or
//! `cache_read_input_tokens` on the Messages API), `cacheMissTokens` the
//! others (`prompt_cache_miss_tokens`; `input_tokens` plus
//! `cache_creation_input_tokens`), `inputTokens` their sum.

use super::extension_error::ExtensionError;
use super::validate::{non_empty_string, optional};
use crate::JsonObject;
use crate::catalog::Usage;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// `session/usage`: a session's usage and cost, from its log.
pub const SESSION_USAGE: &str = "session/usage";

/// `session.usage`: usage after each model request and at each turn's end.
pub const SESSION_USAGE_NOTIFICATION: &str = "session.usage";

/// The price table key that applies to models without their own entry.
pub const ANY_MODEL: &str = "*";

/// USD per million tokens of one model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModelPrice {
    /// Prompt tokens served from the context cache.
    #[schemars(range(min = 0))]
    pub input_cache_hit: f64,
    /// Prompt tokens not in the cache.
    #[schemars(range(min = 0))]
    pub input_cache_miss: f64,
    /// Generated tokens (reasoning included).
    #[schemars(range(min = 0))]
    pub output: f64,
}

impl ModelPrice {
    /// DeepSeek's published API prices (deepseek-chat and
    /// deepseek-reasoner since 2025-09-29), the default of every
    /// `deepseek-*` model.
    pub const DEEPSEEK: Self = Self {
        input_cache_hit: 0.028,
        input_cache_miss: 0.28,
        output: 0.42,
    };

    /// Whether every price is a finite non-negative number.
    fn is_valid(&self) -> bool {
        [self.input_cache_hit, self.input_cache_miss, self.output]
            .iter()
            .all(|p| p.is_finite() && *p >= 0.0)
    }

    /// The cost in USD of `counts` at this price.
    pub fn cost(&self, counts: &TokenCounts) -> f64 {
        (counts.cache_hit_tokens as f64 * self.input_cache_hit
            + counts.cache_miss_tokens as f64 * self.input_cache_miss
            + counts.output_tokens as f64 * self.output)
            / 1_000_000.0
    }
}

/// Prices per model: the client's entries (`initialize.prices`), then
/// its `*` entry, then [`ModelPrice::DEEPSEEK`] for `deepseek-*` models.
/// A model none of these covers has no price (its cost is `null`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct PriceTable {
    /// Model id (or `*`) → price.
    pub models: BTreeMap<String, ModelPrice>,
}

impl PriceTable {
    /// The price of `model`, if any.
    pub fn price(&self, model: &str) -> Option<ModelPrice> {
        self.models
            .get(model)
            .or_else(|| self.models.get(ANY_MODEL))
            .copied()
            .or_else(|| {
                model
                    .starts_with("deepseek-")
                    .then_some(ModelPrice::DEEPSEEK)
            })
    }

    /// Takes `initialize.prices` out of the params: an object of model id
    /// → `{inputCacheHit, inputCacheMiss, output}` (USD per million
    /// tokens, finite and non-negative).
    pub fn take(params: &mut JsonObject) -> Result<Option<Self>, ExtensionError> {
        let Some(value) = params.remove("prices") else {
            return Ok(None);
        };
        let table: Self =
            serde_json::from_value(value).map_err(|err| ExtensionError::Prices(err.to_string()))?;
        if let Some((model, _)) = table.models.iter().find(|(_, p)| !p.is_valid()) {
            return Err(ExtensionError::Prices(format!(
                "{model}: prices must be finite non-negative numbers"
            )));
        }
        Ok(Some(table))
    }
}

/// Token counts of one or more model requests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenCounts {
    /// Model requests that reported usage.
    pub requests: u64,
    /// Prompt tokens (cache hits and misses).
    pub input_tokens: u64,
    /// Prompt tokens served from the provider's context cache.
    pub cache_hit_tokens: u64,
    /// Prompt tokens not in the cache.
    pub cache_miss_tokens: u64,
    /// Generated tokens (reasoning included).
    pub output_tokens: u64,
    /// Of those, reasoning tokens, when the provider reports them.
    pub reasoning_tokens: u64,
}

impl TokenCounts {
    /// The counts of one reply's `usage`.
    pub fn of(usage: &Usage) -> Self {
        let hit = usage.cache_read_tokens.unwrap_or(0);
        let miss = usage
            .input_tokens
            .saturating_add(usage.cache_write_tokens.unwrap_or(0));
        Self {
            requests: 1,
            input_tokens: hit.saturating_add(miss),
            cache_hit_tokens: hit,
            cache_miss_tokens: miss,
            output_tokens: usage.output_tokens,
            reasoning_tokens: usage.reasoning_tokens.unwrap_or(0),
        }
    }

    /// Adds `other` (saturating).
    pub fn add(&mut self, other: &Self) {
        self.requests = self.requests.saturating_add(other.requests);
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.cache_hit_tokens = self.cache_hit_tokens.saturating_add(other.cache_hit_tokens);
        self.cache_miss_tokens = self
            .cache_miss_tokens
            .saturating_add(other.cache_miss_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

/// Token counts per model, for pricing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UsageLedger {
    /// Model id → its counts.
    pub by_model: BTreeMap<String, TokenCounts>,
}

impl UsageLedger {
    /// Records one reply of `model`.
    pub fn record(&mut self, model: &str, counts: &TokenCounts) {
        match self.by_model.get_mut(model) {
            Some(total) => total.add(counts),
            None => {
                self.by_model.insert(model.to_owned(), *counts);
            }
        }
    }

    /// Adds every model's counts of `other`.
    pub fn merge(&mut self, other: &Self) {
        for (model, counts) in &other.by_model {
            self.record(model, counts);
        }
    }

    /// The counts of every model together.
    pub fn totals(&self) -> TokenCounts {
        let mut total = TokenCounts::default();
        for counts in self.by_model.values() {
            total.add(counts);
        }
        total
    }

    /// The counts and their cost at `prices` (`null` when a model with
    /// counts has no price).
    pub fn figures(&self, prices: &PriceTable) -> UsageFigures {
        let cost = self
            .by_model
            .iter()
            .map(|(model, counts)| prices.price(model).map(|p| p.cost(counts)))
            .sum::<Option<f64>>();
        UsageFigures {
            counts: self.totals(),
            cost_usd: cost,
        }
    }
}

/// Token counts with their cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageFigures {
    /// The counts.
    #[serde(flatten)]
    pub counts: TokenCounts,
    /// Their cost in USD, or `null` when a model they include has no
    /// price.
    pub cost_usd: Option<f64>,
}

/// How full the context window was at the last model request.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContextUsage {
    /// Tokens of that request's prompt and reply.
    pub used_tokens: u64,
    /// The model's context window.
    pub window_tokens: u64,
    /// `usedTokens / windowTokens`, in percent (one decimal).
    pub percent: f64,
}

impl ContextUsage {
    /// The context after a request of `counts` in a window of `window`.
    pub fn new(counts: &TokenCounts, window: u64) -> Self {
        let used = counts.input_tokens.saturating_add(counts.output_tokens);
        let percent = if window == 0 {
            0.0
        } else {
            (used as f64 * 1000.0 / window as f64).round() / 10.0
        };
        Self {
            used_tokens: used,
            window_tokens: window,
            percent,
        }
    }
}

/// Params of `session.usage`: sent after each model request that
/// reported usage (with `request`), and once at the end of each turn that
/// made one (`turnEnded: true`, without `request`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUsageParams {
    /// The session (a subagent's usage comes under its own id).
    pub session_id: String,
    /// The turn.
    pub turn: u32,
    /// The step of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// The model of the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// This request's figures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<UsageFigures>,
    /// The turn's figures so far.
    pub turn_total: UsageFigures,
    /// The session's figures so far (every turn, resumed ones included).
    pub session_total: UsageFigures,
    /// The context window at the last request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
    /// Whether the turn has ended (the turn's total is final).
    pub turn_ended: bool,
}

/// Params of `session/usage`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageParams {
    /// The session (open in this process or stored in `DSH_HOME`).
    #[schemars(length(min = 1))]
    pub session_id: String,
}

/// One turn's figures in `session/usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnUsage {
    /// The turn.
    pub turn: u64,
    /// Its figures.
    #[serde(flatten)]
    pub figures: UsageFigures,
}

/// Result of `session/usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageResult {
    /// The session.
    pub session_id: String,
    /// Every request of the session.
    pub total: UsageFigures,
    /// Per model.
    pub by_model: BTreeMap<String, UsageFigures>,
    /// Per turn that made a request, in order.
    pub turns: Vec<TurnUsage>,
    /// The context window at the session's last request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<ContextUsage>,
}

impl UsageParams {
    /// `sessionId` must be a non-empty string.
    pub fn validate(mut params: JsonObject) -> Result<Self, ExtensionError> {
        let session_id =
            non_empty_string(&mut params, "sessionId").ok_or(ExtensionError::UsageSessionId)?;
        Ok(Self { session_id })
    }
}

/// Limits on one prompt's turn (`session/prompt`'s `maxCostUsd` and
/// `maxTurns`): past one, the turn ends before its next model request,
/// `turn/end` reason `aborted` / `budget` naming the limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    /// Most USD the turn's model requests may cost (checked after each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_cost_usd: Option<f64>,
    /// Most model requests (agentic turns, as in the Claude Agent SDK's
    /// `maxTurns`) the turn may make.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub max_turns: Option<u32>,
}

impl Budget {
    /// Takes `maxCostUsd` (a positive finite number) and `maxTurns` (a
    /// positive integer) out of `session/prompt`'s params; `None` when
    /// neither is given (or both are `null`).
    pub fn take(params: &mut JsonObject) -> Result<Option<Self>, ExtensionError> {
        let max_cost_usd = optional(
            params,
            "maxCostUsd",
            |value| value.as_f64().filter(|usd| usd.is_finite() && *usd > 0.0),
            ExtensionError::MaxCostUsd,
        )?;
        let max_turns = optional(
            params,
            "maxTurns",
            |value| {
                value
                    .as_u64()
                    .and_then(|n| u32::try_from(n).ok())
                    .filter(|n| *n > 0)
            },
            ExtensionError::MaxTurns,
        )?;
        Ok(
            (max_cost_usd.is_some() || max_turns.is_some()).then_some(Self {
                max_cost_usd,
                max_turns,
            }),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn counts_map_both_apis_cache_fields() {
        // OpenAI-style: inputTokens already excludes the cached tokens.
        let usage = Usage {
            input_tokens: 600,
            output_tokens: 50,
            cache_read_tokens: Some(400),
            cache_write_tokens: None,
            reasoning_tokens: Some(20),
            total_tokens: 1050,
        };
        let counts = TokenCounts::of(&usage);
        assert_eq!(
            (
                counts.input_tokens,
                counts.cache_hit_tokens,
                counts.cache_miss_tokens
            ),
            (1000, 400, 600)
        );
        assert_eq!((counts.output_tokens, counts.reasoning_tokens), (50, 20));
        // Messages API: cache writes are misses too.
        let usage = Usage {
            cache_write_tokens: Some(100),
            ..usage
        };
        assert_eq!(TokenCounts::of(&usage).cache_miss_tokens, 700);
    }

    #[test]
    fn cost_follows_the_table_and_is_null_without_a_price() {
        let mut ledger = UsageLedger::default();
        let counts = TokenCounts {
            requests: 1,
            input_tokens: 3_000_000,
            cache_hit_tokens: 2_000_000,
            cache_miss_tokens: 1_000_000,
            output_tokens: 1_000_000,
            reasoning_tokens: 0,
        };
        ledger.record("deepseek-v4-flash", &counts);
        let prices = PriceTable::default();
        let cost = ledger.figures(&prices).cost_usd.unwrap_or(f64::NAN);
        assert!((cost - (2.0 * 0.028 + 0.28 + 0.42)).abs() < 1e-9, "{cost}");
        ledger.record("local-model", &counts);
        assert_eq!(ledger.figures(&prices).cost_usd, None);
        assert_eq!(ledger.totals().requests, 2);
        let mut params = object(json!({"prices": {"*": {
            "inputCacheHit": 0.0, "inputCacheMiss": 1.0, "output": 2.0}}}));
        let prices = PriceTable::take(&mut params)
            .ok()
            .flatten()
            .unwrap_or_default();
        // `*` now prices both models.
        let cost = ledger.figures(&prices).cost_usd.unwrap_or(f64::NAN);
        assert!((cost - 6.0).abs() < 1e-9, "{cost}");
    }

    #[test]
    fn bad_prices_and_budgets_are_refused() {
        for prices in [
            json!([1]),
            json!({"m": {"inputCacheHit": 1, "inputCacheMiss": 1}}),
            json!({"m": {"inputCacheHit": -1, "inputCacheMiss": 1, "output": 1}}),
            json!({"m": {"inputCacheHit": 1, "inputCacheMiss": 1, "output": 1, "x": 1}}),
        ] {
            let mut params = object(json!({ "prices": prices }));
            assert!(
                matches!(
                    PriceTable::take(&mut params),
                    Err(ExtensionError::Prices(_))
                ),
                "{prices}"
            );
        }
        for (field, value, error) in [
            ("maxCostUsd", json!(0), ExtensionError::MaxCostUsd),
            ("maxCostUsd", json!("1"), ExtensionError::MaxCostUsd),
            ("maxTurns", json!(0), ExtensionError::MaxTurns),
            ("maxTurns", json!(1.5), ExtensionError::MaxTurns),
        ] {
            let mut params = object(json!({ field: value }));
            assert_eq!(Budget::take(&mut params), Err(error), "{field} {value}");
        }
        let mut params = object(json!({"maxTurns": 3, "maxCostUsd": 0.5, "sessionId": "s"}));
        assert_eq!(
            Budget::take(&mut params),
            Ok(Some(Budget {
                max_cost_usd: Some(0.5),
                max_turns: Some(3)
            }))
        );
        assert_eq!(params.len(), 1);
        assert_eq!(Budget::take(&mut object(json!({}))), Ok(None));
    }

    #[test]
    fn context_percent_has_one_decimal() {
        let counts = TokenCounts {
            input_tokens: 1000,
            output_tokens: 234,
            ..TokenCounts::default()
        };
        let context = ContextUsage::new(&counts, 10_000);
        assert_eq!((context.used_tokens, context.percent), (1234, 12.3));
        assert_eq!(ContextUsage::new(&counts, 0).percent, 0.0);
    }
}
