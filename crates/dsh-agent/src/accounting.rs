//! Usage accounting and budgets (dsh's extension): each model reply's
//! token counts are added to the turn's and the session's ledgers and
//! announced as a `session.usage` notice (never persisted: the log's
//! `assistant/message.usage` stays the record); each turn's final figures
//! are announced at its end; a prompt's [`Budget`] ends its turn before a
//! model request that would go past it.
//!
//! A session's ledger starts from its stored replies on resume (a fork's
//! inherited replies are its parent's, not its own). A subagent accounts
//! for itself: its notices carry its own session id, and a parent's budget
//! counts only the parent's own requests.

use crate::core::Agent;
use crate::core::{AgentState, Core, Feature, HookFuture};
use dsh_protocol::catalog::{AbortReason, BudgetLimit, TurnEndReason, Usage};
use dsh_protocol::methods::{
    Budget, ContextUsage, PriceTable, SessionUsageParams, TokenCounts, UsageLedger,
};
use dsh_session::LogUnwritable;
use dsh_session::store::ResumeFacts;
use dsh_session::{LiveNotice, UserMessage};
use dsh_tools::CancellationToken;
use serde_json::Value;
use std::collections::VecDeque;
use std::sync::Arc;

/// Most budgets kept for prompts not yet claimed; past it the oldest is
/// forgotten (a prompt dropped from the queue by `session/cancel` never
/// claims its budget).
const QUEUED_BUDGETS_MAX: usize = 1024;

/// The accounting feature.
pub(crate) struct Accounting;

/// Its per-agent state.
#[derive(Default)]
pub(crate) struct Ledgers {
    /// Every reply of the session (resumed ones included).
    session: UsageLedger,
    /// The open (or last) turn's replies.
    turn: UsageLedger,
    /// Model replies in the open turn.
    replies: u32,
    /// The open turn's budget.
    budget: Option<Budget>,
    /// Budgets of prompts not yet claimed, with their message ids, oldest
    /// first.
    queued: VecDeque<(String, Budget)>,
    /// The context window at the last reply.
    context: Option<ContextUsage>,
    /// The prices of the agent (known from its first reply on).
    prices: Option<Arc<PriceTable>>,
}

impl Ledgers {
    /// The notice of the state so far.
    fn notice(&self, session_id: &str, turn: u32, prices: &PriceTable) -> SessionUsageParams {
        SessionUsageParams {
            session_id: session_id.to_owned(),
            turn,
            step: None,
            model: None,
            request: None,
            turn_total: self.turn.figures(prices),
            session_total: self.session.figures(prices),
            context: self.context,
            turn_ended: false,
        }
    }

    /// The limit the open turn has reached, if any.
    fn reached(&self, prices: &PriceTable) -> Option<BudgetLimit> {
        let budget = self.budget?;
        if budget.max_turns.is_some_and(|max| self.replies >= max) {
            return Some(BudgetLimit::MaxTurns);
        }
        let spent = self.turn.figures(prices).cost_usd;
        match (budget.max_cost_usd, spent) {
            (Some(max), Some(spent)) if spent >= max => Some(BudgetLimit::MaxCostUsd),
            // A model without a price cannot be held to a cost: the turn
            // stops rather than spend without a limit.
            (Some(_), None) => Some(BudgetLimit::MaxCostUsd),
            _ => None,
        }
    }
}

impl Agent {
    /// [`Agent::prompt`] with a [`Budget`] for the turn the prompt starts
    /// (`None`: no limit).
    pub fn prompt_within(
        &self,
        content: Vec<Value>,
        budget: Option<Budget>,
        ack: impl FnOnce(&str),
    ) -> Result<(), LogUnwritable> {
        let Some(budget) = budget else {
            return self.prompt(content, ack);
        };
        self.prompt_with(
            content,
            |state, id| {
                let queued = &mut state.extension::<Ledgers>().queued;
                if queued.len() >= QUEUED_BUDGETS_MAX {
                    queued.pop_front();
                }
                queued.push_back((id.to_owned(), budget));
            },
            ack,
        )
    }
}

impl Feature for Accounting {
    fn resumed(&self, state: &mut AgentState, facts: &ResumeFacts) {
        state.extension::<Ledgers>().session = facts.usage.clone();
    }

    fn turn_started(&self, state: &mut AgentState, prompt: Option<&UserMessage>) {
        let ledgers = state.extension::<Ledgers>();
        ledgers.turn = UsageLedger::default();
        ledgers.replies = 0;
        ledgers.budget = prompt.and_then(|p| {
            let at = ledgers.queued.iter().position(|(id, _)| *id == p.id)?;
            ledgers.queued.remove(at).map(|(_, budget)| budget)
        });
    }

    fn replied(
        &self,
        core: &Core,
        state: &mut AgentState,
        turn: u32,
        step: u32,
        usage: Option<&Usage>,
    ) {
        let session_id = state.session_id().to_owned();
        let ledgers = state.extension::<Ledgers>();
        ledgers.replies = ledgers.replies.saturating_add(1);
        let Some(usage) = usage else { return };
        let counts = TokenCounts::of(usage);
        let model = core.route.model.as_str();
        ledgers.turn.record(model, &counts);
        ledgers.session.record(model, &counts);
        ledgers.context = Some(ContextUsage::new(&counts, core.context_window));
        ledgers.prices = Some(Arc::clone(&core.prices));
        let mut request = UsageLedger::default();
        request.record(model, &counts);
        let notice = SessionUsageParams {
            step: Some(step),
            model: Some(model.to_owned()),
            request: Some(request.figures(&core.prices)),
            ..ledgers.notice(&session_id, turn, &core.prices)
        };
        state.announce_live(LiveNotice::Usage(Box::new(notice)));
    }

    fn before_step<'a>(
        &'a self,
        core: &'a Core,
        _turn: u32,
        _pending: &'a [UserMessage],
        _cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Option<TurnEndReason>> {
        let limit = core.state().extension::<Ledgers>().reached(&core.prices);
        Box::pin(std::future::ready(limit.map(|limit| {
            TurnEndReason::Aborted {
                reason: AbortReason::Budget { limit },
            }
        })))
    }

    fn turn_ended(&self, state: &mut AgentState, _reason: &TurnEndReason) {
        let session_id = state.session_id().to_owned();
        let turn = state.last_turn();
        let ledgers = state.extension::<Ledgers>();
        ledgers.budget = None;
        let Some(prices) = ledgers.prices.clone() else {
            return;
        };
        if ledgers.turn.by_model.is_empty() {
            return;
        }
        let notice = SessionUsageParams {
            turn_ended: true,
            ..ledgers.notice(&session_id, turn, &prices)
        };
        state.announce_live(LiveNotice::Usage(Box::new(notice)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(output: u64) -> TokenCounts {
        TokenCounts {
            requests: 1,
            input_tokens: 1_000_000,
            cache_hit_tokens: 0,
            cache_miss_tokens: 1_000_000,
            output_tokens: output,
            reasoning_tokens: 0,
        }
    }

    #[test]
    fn budgets_stop_at_their_limit_only() {
        let prices = PriceTable::default();
        let mut ledgers = Ledgers::default();
        assert_eq!(ledgers.reached(&prices), None);
        ledgers.budget = Some(Budget {
            max_cost_usd: Some(0.5),
            max_turns: Some(3),
        });
        ledgers.turn.record("deepseek-v4-flash", &counts(0));
        ledgers.replies = 1;
        // 0.28 USD spent: under both limits.
        assert_eq!(ledgers.reached(&prices), None);
        ledgers.turn.record("deepseek-v4-flash", &counts(0));
        ledgers.replies = 2;
        assert_eq!(ledgers.reached(&prices), Some(BudgetLimit::MaxCostUsd));
        ledgers.budget = Some(Budget {
            max_cost_usd: None,
            max_turns: Some(2),
        });
        assert_eq!(ledgers.reached(&prices), Some(BudgetLimit::MaxTurns));
        // A cost limit on a model without a price stops the turn.
        let mut unpriced = Ledgers {
            budget: Some(Budget {
                max_cost_usd: Some(100.0),
                max_turns: None,
            }),
            ..Ledgers::default()
        };
        assert_eq!(unpriced.reached(&prices), None);
        unpriced.turn.record("local", &counts(1));
        assert_eq!(unpriced.reached(&prices), Some(BudgetLimit::MaxCostUsd));
    }
}
