// The workflow hooks. This file is one function expression: the engine
// evaluates it, calls it once with the native functions and the run's
// settings, and keeps the `settle` function it returns. The natives stay in
// this closure; only the hooks become globals.
(function (nativeAgent, nativeLog, maxAgents, args) {
  "use strict";

  const global = globalThis;
  const PromiseCtor = Promise;
  const isArray = Array.isArray;
  const objectKeys = Object.keys;
  const stringify = JSON.stringify;
  const StringCtor = String;

  class WorkflowError extends Error {
    constructor(message) {
      super(message);
      this.name = "WorkflowError";
    }
  }

  // Resolvers of the agent() calls not yet settled, by call id.
  const pending = Object.create(null);
  let currentPhase = undefined;

  const OPTIONS = ["label", "phase", "schema", "provider", "model"];
  const SUPPORTED = OPTIONS.join(", ");

  function stringOption(opts, key) {
    const value = opts[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== "string") {
      throw new WorkflowError(`agent() option "${key}" must be a string, not ${describe(value)}`);
    }
    return value;
  }

  function describe(value) {
    if (value === null) return "null";
    if (isArray(value)) return "an array";
    const type = typeof value;
    return type === "object" ? "an object" : `a ${type}`;
  }

  function agent(prompt, opts) {
    if (typeof prompt !== "string" || prompt.trim() === "") {
      throw new WorkflowError("agent() requires a non-empty prompt string");
    }
    if (opts === undefined || opts === null) opts = {};
    if (typeof opts !== "object" || isArray(opts)) {
      throw new WorkflowError(`agent() options must be an object, not ${describe(opts)}`);
    }
    for (const key of objectKeys(opts)) {
      if (!OPTIONS.includes(key)) {
        throw new WorkflowError(
          `agent() option ${stringify(key)} is not recognized (supported: ${SUPPORTED})`,
        );
      }
    }
    const label = stringOption(opts, "label");
    const phase = stringOption(opts, "phase");
    const provider = stringOption(opts, "provider");
    const model = stringOption(opts, "model");
    let schema = undefined;
    if (opts.schema !== undefined && opts.schema !== null) {
      if (typeof opts.schema !== "object" || isArray(opts.schema)) {
        throw new WorkflowError(
          `agent() option "schema" must be a JSON schema object, not ${describe(opts.schema)}`,
        );
      }
      try {
        schema = stringify(opts.schema);
      } catch (err) {
        throw new WorkflowError(`agent() option "schema" is not JSON data: ${err}`);
      }
    }
    const id = nativeAgent(
      prompt,
      label,
      phase === undefined ? currentPhase : phase,
      schema,
      provider,
      model,
    );
    if (id === 0) {
      throw new WorkflowError(
        `agent() was called more than ${maxAgents} times; a run may start at most ` +
          `${maxAgents} agents (DSH_WORKFLOW_MAX_AGENTS)`,
      );
    }
    return new PromiseCtor((resolve) => {
      pending[id] = resolve;
    });
  }

  function parallel(items) {
    if (!isArray(items)) {
      throw new WorkflowError(
        "parallel() requires an array (of functions to call, promises or values)",
      );
    }
    return PromiseCtor.all(
      items.map((item) => (typeof item === "function" ? (async () => item())() : item)),
    );
  }

  function pipeline(items, ...stages) {
    if (!isArray(items)) {
      throw new WorkflowError("pipeline() requires an items array");
    }
    stages.forEach((stage, index) => {
      if (typeof stage !== "function") {
        throw new WorkflowError(
          `pipeline() stage ${index + 1} is ${describe(stage)}; every stage must be a function`,
        );
      }
    });
    return PromiseCtor.all(
      items.map(async (item) => {
        let value = item;
        for (const stage of stages) {
          value = await stage(value, item);
        }
        return value;
      }),
    );
  }

  function phase(title) {
    if (typeof title !== "string" || title.trim() === "") {
      throw new WorkflowError("phase() requires a non-empty title string");
    }
    currentPhase = title;
    return undefined;
  }

  function format(value) {
    if (typeof value === "string") return value;
    try {
      const json = stringify(value);
      if (typeof json === "string") return json;
    } catch (_) {
      // Not JSON (a bigint, a cycle...): fall back to String().
    }
    try {
      return StringCtor(value);
    } catch (_) {
      return Object.prototype.toString.call(value);
    }
  }

  function log(...values) {
    nativeLog(values.map(format).join(" "));
    return undefined;
  }

  const console = {
    log,
    info: log,
    warn: log,
    error: log,
    debug: log,
  };

  const hooks = { agent, parallel, pipeline, phase, log, args, console };
  for (const name of objectKeys(hooks)) {
    Object.defineProperty(global, name, {
      value: hooks[name],
      writable: true,
      enumerable: false,
      configurable: true,
    });
  }

  // Called by the engine with the value the host gave for call `id`.
  return function settle(id, value) {
    const resolve = pending[id];
    if (resolve === undefined) return false;
    delete pending[id];
    resolve(value);
    return true;
  };
});
