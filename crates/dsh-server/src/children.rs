//! The server as its agents' [`SessionHost`]: child sessions are created in
//! the same store, published to the same client and registered with the
//! root sessions, so the client can wait on, prompt or resume them by id.

use crate::state::ServerInner;
use dsh_agent::{Agent, HostError, SessionHost};
use dsh_session::store::{SessionHeader, SessionWriter};
use dsh_session::{EventLog, EventObserver};
use std::sync::{Arc, Weak};

/// A weak handle on the server (the server owns the agents that hold it).
pub(crate) struct ChildHost(pub Weak<ServerInner>);

impl ChildHost {
    fn server(&self) -> Result<Arc<ServerInner>, HostError> {
        self.0
            .upgrade()
            .ok_or_else(|| HostError("the runtime is shutting down".to_owned()))
    }
}

impl SessionHost for ChildHost {
    fn create_log(&self, header: &SessionHeader) -> Result<EventLog, HostError> {
        let server = self.server()?;
        let config = &server.config;
        let writer = SessionWriter::create(&config.store, header, config.encoding)
            .map_err(|err| HostError(err.to_string()))?;
        Ok(EventLog::new(header.id.clone(), None).with_writer(writer))
    }

    fn observer(&self) -> Arc<dyn EventObserver> {
        match self.server() {
            Ok(server) => server.publisher(),
            // Nothing is published once the server is gone.
            Err(_) => Arc::new(Silent),
        }
    }

    fn register(&self, agent: &Arc<Agent>) -> Result<(), HostError> {
        let server = self.server()?;
        let mut registry = server.registry();
        if registry.shutting_down {
            return Err(HostError("the runtime is shutting down".to_owned()));
        }
        registry
            .sessions
            .insert(agent.id().to_owned(), Arc::clone(agent));
        Ok(())
    }
}

/// An observer that drops everything.
struct Silent;

impl EventObserver for Silent {
    fn on_event(&self, _session_id: &str, _event: &dsh_session::EventBytes) {}
    fn on_status(&self, _session_id: &str, _status: dsh_session::SessionStatus) {}
}
