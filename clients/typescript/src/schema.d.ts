// Generated from the memtrial service's OpenAPI document by `npm run generate` (scripts/generate.mjs).
// Do not edit by hand: change the service, then regenerate; `npm run check-types` fails when this is stale.
export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Healthz */
        get: operations["healthz_healthz_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Metrics */
        get: operations["metrics_metrics_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readyz */
        get: operations["readyz_readyz_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List Agents
         * @description The tenant's agents, oldest first, a page at a time (``name`` filters by exact name).
         */
        get: operations["list_agents_v1_agents_get"];
        put?: never;
        /**
         * Create Agent
         * @description Create an agent; its gate configuration (and so the hash anchoring its log) is frozen now.
         */
        post: operations["create_agent_v1_agents_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Agent */
        get: operations["get_agent_v1_agents__agent_id__get"];
        put?: never;
        post?: never;
        /**
         * Delete Agent
         * @description Delete the agent and everything it owns: experiences and their embeddings, decisions,
         *     contributions, log entries, state checkpoints, refit jobs, stored idempotent answers. Irreversible.
         */
        delete: operations["delete_agent_v1_agents__agent_id__delete"];
        options?: never;
        head?: never;
        /**
         * Update Agent
         * @description Rename the agent, change its drafter (``remove_drafter`` turns server drafting off) or its draft budget
         *     and horizon (from the next plan on, logged with the old and new values); every other setting is fixed.
         */
        patch: operations["update_agent_v1_agents__agent_id__patch"];
        trace?: never;
    };
    "/v1/agents/{agent_id}/decisions": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List Decisions
         * @description The agent's decisions, oldest first, a page at a time.
         */
        get: operations["list_decisions_v1_agents__agent_id__decisions_get"];
        put?: never;
        /**
         * Create Decision
         * @description Plan a decision. Client drafting answers the plan (post one draft per subset next);
         *     server drafting drafts through the agent's provider and answers the decision.
         */
        post: operations["create_decision_v1_agents__agent_id__decisions_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/decisions/{decision_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Decision */
        get: operations["get_decision_v1_agents__agent_id__decisions__decision_id__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/decisions/{decision_id}/corrections": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Correct Decision
         * @description Replace a settled decision's wrong outcome (a bad price feed, a mis-graded answer) and relearn.
         *
         *     Takes the settle body and a ``reason``. The log keeps the superseded score and gains a
         *     ``correction`` entry; values, trust statistics and the fallback become those of an agent
         *     settled with the corrected outcome from the start. Correcting with the current outcome is a no-op.
         */
        post: operations["correct_decision_v1_agents__agent_id__decisions__decision_id__corrections_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/decisions/{decision_id}/drafts": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Submit Drafts
         * @description One draft per designed subset, in the plan's order: for a portfolio agent each names every asset
         *     of the universe; for a scored agent any JSON (probabilities per outcome, numbers, answers), with
         *     ``reference`` the index of the conservative draft.
         */
        post: operations["submit_drafts_v1_agents__agent_id__decisions__decision_id__drafts_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/decisions/{decision_id}/settle": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Settle Decision
         * @description Score a matured decision and learn from it (settling again with the same payload is a no-op).
         */
        post: operations["settle_decision_v1_agents__agent_id__decisions__decision_id__settle_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/experiences": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List Experiences
         * @description A page of the agent's experiences in insertion order; each says its ``status``, and a quarantined one
         *     the evidence it was quarantined on (``quarantine``).
         */
        get: operations["list_experiences_v1_agents__agent_id__experiences_get"];
        put?: never;
        /**
         * Add Experiences
         * @description Add one experience, or a batch (``{"experiences": [...]}``, at most 256 and 1,000,000 characters of text).
         *
         *     An item whose ``external_id`` the agent already holds updates that experience (text, metadata) instead
         *     of adding another; each answered item says ``write``: created, updated or unchanged.
         */
        post: operations["add_experiences_v1_agents__agent_id__experiences_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/experiences/{experience_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Experience */
        get: operations["get_experience_v1_agents__agent_id__experiences__experience_id__get"];
        put?: never;
        post?: never;
        /**
         * Delete Experience
         * @description Forget an experience (its past contributions stay in the decisions that used them). 409
         *     ``quarantined`` for one in quarantine: release it (logged) or retire it first, so that adding it again
         *     under its external id cannot take it out of quarantine without an entry in the log.
         */
        delete: operations["delete_experience_v1_agents__agent_id__experiences__experience_id__delete"];
        options?: never;
        head?: never;
        /** Update Metadata */
        patch: operations["update_metadata_v1_agents__agent_id__experiences__experience_id__patch"];
        trace?: never;
    };
    "/v1/agents/{agent_id}/experiences/{experience_id}/release": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Release Experience
         * @description Release a quarantined experience by hand: it is retrieved again and its test starts afresh. A
         *     ``release`` entry of the agent's log records the evidence at this moment and the reason; 409
         *     ``not_quarantined`` for an experience that is not quarantined. With an ``Idempotency-Key``, a retry
         *     whose first answer was lost gets that answer (the release is logged once), not a 409.
         */
        post: operations["release_experience_v1_agents__agent_id__experiences__experience_id__release_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/experiences/{experience_id}/retire": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Retire Experience
         * @description Stop retrieving an experience; its value and history stay (retiring twice is harmless).
         */
        post: operations["retire_experience_v1_agents__agent_id__experiences__experience_id__retire_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/experiences/rank": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Rank Experiences
         * @description Rank candidates from your own store: the k to use, best first, by the agent's ``retrieval`` (by
         *     similarity, or ``value_aware``: similarity and learned value, weighed by the trust evidence), each with
         *     why it was picked and its value now. Quarantined candidates are never picked; nothing is written.
         */
        post: operations["rank_experiences_v1_agents__agent_id__experiences_rank_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/experiences/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Search Experiences */
        post: operations["search_experiences_v1_agents__agent_id__experiences_search_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/refit": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Start Refit
         * @description Queue a full-Bayes refit (NUTS by default, or SVI) of the agent's values; poll it with GET .../refit/{job}.
         *     429 ``queue_full`` when this server holds its most refits; 503 ``refit_unavailable`` when the Dask
         *     scheduler refits run on cannot be reached (nothing is queued).
         */
        post: operations["start_refit_v1_agents__agent_id__refit_post"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/refit/{job_id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Refit */
        get: operations["get_refit_v1_agents__agent_id__refit__job_id__get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/trust": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Get Trust */
        get: operations["get_trust_v1_agents__agent_id__trust_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/trust/log": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get Log
         * @description The raw hash-chained log, a page at a time, for verification outside the service.
         */
        get: operations["get_log_v1_agents__agent_id__trust_log_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/trust/verify": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Verify Trust
         * @description Recompute the whole chain from the stored rows (read page by page) and check it ends at the engine's head.
         */
        get: operations["verify_trust_v1_agents__agent_id__trust_verify_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/agents/{agent_id}/values": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get Values
         * @description Every valued experience, best first: text, external id, mean, sd, 90% interval and P(v > 0).
         */
        get: operations["get_values_v1_agents__agent_id__values_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/llm/providers": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List Providers */
        get: operations["list_providers_v1_llm_providers_get"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** AgentCreate */
        AgentCreate: {
            /**
             * Action
             * @description dial: weigh memory by the anytime e-process (needs gate.test 'anytime' or 'none'); gate: act on the best designed draft once the gate opens (any gate.test)
             * @default dial
             * @enum {string}
             */
            action?: "gate" | "dial";
            /** @description scored agents: what each draft is; server drafting asks the model for it, and drafts a client posts are held to it (a number's range, a choice's list, a text's length); default: probabilities over outcomes, else any JSON from a client and free text from the server */
            answer?: components["schemas"]["AnswerSettings"] | null;
            /**
             * Credit
             * @description what values are learned from: the raw same-day contrasts or date-centred contributions
             * @default raw
             * @enum {string}
             */
            credit?: "centred" | "raw";
            /**
             * Design
             * @description fold: the eight odd-size subsets of the four retrieved (every experience alone, no memory-free run); half: the eight even-size ones (the memory-free draft first); full: all sixteen; saturated: up to seven retrieved (k) screened in eight runs (no memory-free run). Default: fold for portfolio agents, half for scored agents (their reference is the memory-free draft)
             * @default fold
             * @enum {string}
             */
            design?: "half" | "fold" | "full" | "saturated";
            /**
             * Draft Budget
             * @description LLM draft calls per decision on average (null: every designed subset every time); each plan lists exactly the drafts to make
             */
            draft_budget?: number | null;
            /**
             * Draft Horizon
             * @description the number of decisions the draft budget covers (null: open-ended): trials then come first, on credit the later decisions lend, each keeping one call
             */
            draft_horizon?: number | null;
            drafter?: components["schemas"]["DrafterSettings"] | null;
            /**
             * Fallback
             * @description what a closed gate or a dial short of full trust plays: ref: the reference; ftrl: the KL-anchored mixture of the reference and the draft mean (a0 = 0.9); uniform: the same with a0 = 0.5; ens: the draft mean
             * @default ref
             * @enum {string}
             */
            fallback?: "ftrl" | "ens" | "ref" | "uniform";
            /**
             * Fee Bp
             * @default 15
             */
            fee_bp?: number;
            /**
             * @default {
             *       "alpha": 0.05,
             *       "test": "anytime"
             *     }
             */
            gate?: components["schemas"]["GateSettings"];
            /**
             * Investor
             * @description portfolio agents: the mandate and risk aversion
             */
            investor?: ("conservative" | "balanced" | "aggressive") | null;
            /**
             * K
             * @description experiences retrieved per decision; half, fold and full draft 2**(k-1), 2**(k-1) and 2**k subsets, saturated the smallest power of two above k (2 for k = 1, 4 for 2 to 3, 8 for 4 to 7, 16 for 8); k = 1 needs full or saturated (a half fraction of one experience is one run, which cannot credit it); a setting that needs more drafts than the server's MEMTRIAL_MAX_DRAFTS_PER_DECISION (default 64) is refused
             * @default 4
             */
            k?: number;
            /**
             * Kind
             * @description portfolio: drafts are weights over the universe, settled by prices; scored: drafts are any JSON, settled by utilities or an outcome and a rule
             * @default portfolio
             * @enum {string}
             */
            kind?: "portfolio" | "scored";
            /**
             * Learner
             * @default auto
             * @enum {string}
             */
            learner?: "auto" | "identity" | "content";
            /** Name */
            name: string;
            /**
             * Outcomes
             * @description scored agents whose drafts are probability forecasts: the outcome names each draft gives a probability for
             */
            outcomes?: string[] | null;
            /**
             * @description keep credibly harmful experiences out of retrieval (GET .../experiences?status=quarantined lists them, POST .../experiences/{id}/release releases one)
             * @default {
             *       "change_threshold": 1000,
             *       "clip": 1,
             *       "control": "fdr",
             *       "enabled": true,
             *       "level": 0.05,
             *       "spread": 30
             *     }
             */
            quarantine?: components["schemas"]["QuarantineSettings"];
            /**
             * Reference
             * @description portfolio agents: the conservative reference is the decision's reference_weights (equal weight when none) or its own memory-free draft
             * @default given
             * @enum {string}
             */
            reference?: "given" | "memory_free";
            /**
             * Retrieval
             * @description similarity: plans retrieve the k experiences closest to the context; value_aware: by similarity and learned value, acting on values only as much as the trust evidence allows (with none, exactly the similarity ranking)
             * @default value_aware
             * @enum {string}
             */
            retrieval?: "similarity" | "value_aware";
            /**
             * Robust
             * @description screen each settlement's contributions for outliers before learning (clipped beyond 6 robust sds, set aside beyond 50); false: the method's plain estimator
             * @default false
             */
            robust?: boolean;
            /**
             * Universe
             * @description portfolio agents: the assets
             */
            universe?: components["schemas"]["Asset"][] | null;
        };
        /**
         * AgentList
         * @description One page of agents, oldest first; pass ``next_cursor`` as ``cursor`` for the next (null: last page).
         */
        AgentList: {
            /** Items */
            items: components["schemas"]["AgentPublic"][];
            /** Limit */
            limit: number;
            /** Next Cursor */
            next_cursor: string | null;
        };
        /**
         * AgentPatch
         * @description What can change after creation: the name, the drafter, the draft budget with its horizon, the retrieval
         *     mode and the quarantine. Every other setting is fixed at creation (:data:`FIXED_AGENT_SETTINGS` says why).
         */
        AgentPatch: {
            /**
             * Draft Budget
             * @description LLM draft calls per decision on average from the next plan on (null: every designed subset every time); the running credit carries over
             */
            draft_budget?: number | null;
            /**
             * Draft Horizon
             * @description the number of decisions planned under a budget that it covers, counted from the first (null: open-ended)
             */
            draft_horizon?: number | null;
            drafter?: components["schemas"]["DrafterSettings"] | null;
            /** Name */
            name?: string | null;
            /** @description the fields given change, the others stay: turning it on starts every experience's test afresh from the next settlement; turning it off drops the tests (quarantined experiences are retrieved again); a new level or change_threshold applies from the next settlement */
            quarantine?: components["schemas"]["QuarantineSettings"];
            /**
             * Remove Drafter
             * @default false
             */
            remove_drafter?: boolean;
            /**
             * Retrieval
             * @description similarity: plans retrieve the k experiences closest to the context; value_aware: by similarity and learned value, acting on values only as much as the trust evidence allows (with none, exactly the similarity ranking); from the next plan on
             * @enum {string}
             */
            retrieval?: "similarity" | "value_aware";
        };
        /** AgentPublic */
        AgentPublic: {
            /**
             * Action
             * @enum {string}
             */
            action: "gate" | "dial";
            /**
             * Answer
             * @description scored agents: what a server-drafted draft is (null: probabilities over outcomes, else text)
             */
            answer: {
                [key: string]: unknown;
            } | null;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * Credit
             * @enum {string}
             */
            credit: "centred" | "raw";
            /**
             * Design
             * @enum {string}
             */
            design: "half" | "fold" | "full" | "saturated";
            /**
             * Draft Budget
             * @description LLM draft calls per decision on average (null: the whole design)
             */
            draft_budget: number | null;
            /**
             * Draft Horizon
             * @description the number of decisions the budget covers (null: open-ended)
             */
            draft_horizon: number | null;
            /** Drafter */
            drafter: {
                [key: string]: unknown;
            } | null;
            /**
             * Fallback
             * @enum {string}
             */
            fallback: "ftrl" | "ens" | "ref" | "uniform";
            /** Fee Bp */
            fee_bp: number;
            gate: components["schemas"]["GatePublic"];
            /** Gate Hash */
            gate_hash: string;
            /** Id */
            id: string;
            /** Investor */
            investor: string | null;
            /**
             * K
             * @description experiences retrieved per decision
             * @default 4
             */
            k: number;
            /**
             * Kind
             * @default portfolio
             * @enum {string}
             */
            kind: "portfolio" | "scored";
            /**
             * Learner
             * @enum {string}
             */
            learner: "identity" | "content" | "auto";
            /** Name */
            name: string;
            /** Outcomes */
            outcomes: string[] | null;
            /** @description the quarantine of credibly harmful experiences (null: an agent made before the setting existed, which runs without one) */
            quarantine: components["schemas"]["QuarantineStatePublic"] | null;
            /**
             * Reference
             * @description given (reference_weights, equal weight by default) or memory_free
             * @default given
             * @enum {string}
             */
            reference: "given" | "memory_free";
            /**
             * Retrieval
             * @description how plans retrieve: by similarity alone, or by similarity and learned value
             * @default similarity
             * @enum {string}
             */
            retrieval: "similarity" | "value_aware";
            /**
             * Robust
             * @description whether each settlement's contributions are screened for outliers before learning (false for an agent made before the setting existed, which learnt without it)
             * @default false
             */
            robust: boolean;
            /** Universe */
            universe: components["schemas"]["Asset"][] | null;
        };
        /**
         * AnswerSettings
         * @description What a scored agent's drafts are, for server drafting (the model is asked for exactly this form).
         */
        AnswerSettings: {
            /**
             * Choices
             * @description choice: the allowed answers
             */
            choices?: string[] | null;
            /**
             * Instructions
             * @description what the answer is, in words every prompt opens with (one line, without '<' or '>')
             */
            instructions?: string | null;
            /**
             * Maximum
             * @description number: the largest allowed answer
             */
            maximum?: number | null;
            /**
             * Minimum
             * @description number: the smallest allowed answer
             */
            minimum?: number | null;
            /**
             * Type
             * @description probabilities: one per named outcome (agents with outcomes); number: a finite number; choice: one of choices; text: free text
             * @enum {string}
             */
            type: "probabilities" | "number" | "choice" | "text";
        };
        /** Asset */
        Asset: {
            /** Asset */
            asset: string;
            /**
             * Asset Class
             * @enum {string}
             */
            asset_class: "equities" | "bonds" | "cash" | "commodities" | "real_estate" | "crypto" | "stocks";
        };
        /** ContributionPublic */
        ContributionPublic: {
            /**
             * Centred
             * @description the contrast minus the decision's mean contrast, in utility per decision
             */
            centred: number;
            /**
             * Contribution
             * @description the experience's contrast in this decision, in utility per decision
             */
            contribution: number;
            /** Decision Id */
            decision_id: string;
            /**
             * Decision Time
             * Format: date-time
             */
            decision_time: string;
        };
        /**
         * CorrectionPublic
         * @description An outcome a correction replaced: why, when, and the settlement as it stood (superseded).
         */
        CorrectionPublic: {
            /**
             * Corrected At
             * Format: date-time
             */
            corrected_at: string;
            /** Reason */
            reason: string;
            /**
             * Superseded
             * @description the replaced settlement as it was answered
             */
            superseded: {
                [key: string]: unknown;
            };
        };
        /**
         * CorrectionRequest
         * @description A settle body with the reason the earlier outcome was wrong.
         */
        CorrectionRequest: {
            /**
             * Outcome
             * @description scored: the realised outcome, scored by rule
             */
            outcome?: unknown;
            /**
             * Prices
             * @description portfolio: per asset, entry close then one close per session
             */
            prices?: {
                [key: string]: number[];
            } | null;
            /**
             * Reason
             * @description why the earlier outcome was wrong (kept in the log)
             */
            reason: string;
            /**
             * Returns
             * @description portfolio: per asset, one simple return per session
             */
            returns?: {
                [key: string]: number[];
            } | null;
            /**
             * Rule
             * @description scored: brier or log (probability forecasts; the outcome names an outcome), exact (answer equals outcome), abs_error (numbers)
             */
            rule?: ("brier" | "log" | "exact" | "abs_error") | null;
            /**
             * Settled At
             * @description when the outcome became known; default: the maturity (which must have passed)
             */
            settled_at?: string | null;
            /**
             * Utilities
             * @description scored: one utility per draft, in the plan's order (higher is better)
             */
            utilities?: number[] | null;
        };
        /** DecisionCreate */
        DecisionCreate: {
            /**
             * Candidate External Ids
             * @description as candidate_ids, by the external ids the experiences were added with (compared in Unicode normal form C)
             */
            candidate_external_ids?: string[] | null;
            /**
             * Candidate Ids
             * @description bring your own candidates: ids of this agent's active experiences (1 to 100, distinct), of which the engine picks k by the agent's retrieval mode (quarantined ones left out); the server does not search
             */
            candidate_ids?: string[] | null;
            /** Context Features */
            context_features?: {
                [key: string]: number;
            };
            /** Context Text */
            context_text: string;
            /**
             * Decision Time
             * Format: date-time
             * @description when the decision is made; not later than now plus the server's allowed clock skew
             */
            decision_time: string;
            /**
             * Drafting
             * @default client
             * @enum {string}
             */
            drafting?: "client" | "server";
            /**
             * Horizon
             * @description holding horizon in sessions
             * @default 20
             */
            horizon?: number;
            /**
             * Maturity
             * Format: date-time
             * @description when the outcome is known (after the horizon's last close)
             */
            maturity: string;
            /** Reference Weights */
            reference_weights?: {
                [key: string]: number;
            } | null;
            /**
             * Retrieved External Ids
             * @description as retrieved_ids, by the external ids the experiences were added with (compared in Unicode normal form C)
             */
            retrieved_external_ids?: string[] | null;
            /**
             * Retrieved Ids
             * @description bring your own retrieval: the experiences to plan on (ids of this agent's active experiences, 0 to k, in your rank order; [] when your retrieval found nothing: the plan drafts without memory alone); the server then neither embeds the context nor searches
             */
            retrieved_ids?: string[] | null;
            /**
             * Similarities
             * @description with candidates: one finite score per candidate, higher is closer (null: the given order is the similarity order)
             */
            similarities?: number[] | null;
        };
        /**
         * DecisionList
         * @description A page of decisions, oldest first; pass ``next_cursor`` as ``cursor`` for the next (null: last page).
         */
        DecisionList: {
            /** Items */
            items: components["schemas"]["DecisionSummary"][];
            /** Limit */
            limit: number;
            /** Next Cursor */
            next_cursor: string | null;
        };
        /**
         * DecisionPublic
         * @description A decided decision. Portfolio decisions: ``weights`` per asset and ``drafts`` as weights.
         *     Scored decisions: ``drafts`` as they were sent, ``chosen`` the draft played (or the blend, as
         *     probabilities per outcome), ``played`` its index (null: a blend) and ``reference`` the designated draft.
         */
        DecisionPublic: {
            /** Action */
            action: string;
            /** Chosen */
            chosen: unknown;
            /** Decision Id */
            decision_id: string;
            dial: components["schemas"]["DialPublic"] | null;
            /**
             * Draft Calls
             * @description the drafts the decision was made from (one LLM call each)
             */
            draft_calls: number | null;
            /** Drafts */
            drafts: unknown[];
            /** Explanation */
            explanation: string;
            /** Learner Mode */
            learner_mode: string;
            /** Mask */
            mask: number | null;
            plan: components["schemas"]["PlanPublic"];
            /** Played */
            played: number | null;
            /**
             * Predicted Gain
             * @description the predicted gain of the chosen subset over the reference, in utility per decision
             */
            predicted_gain: number;
            /**
             * Predictions
             * @description predicted value of each retrieved experience, by id, in utility per decision
             */
            predictions: {
                [key: string]: number;
            };
            /** Q */
            q: number | null;
            /** Reference */
            reference: number | null;
            /** Status */
            status: string;
            /** Subset */
            subset: string[] | null;
            trust: components["schemas"]["TrustStatePublic"];
            /** Weights */
            weights: {
                [key: string]: number;
            } | null;
        };
        /**
         * DecisionRecord
         * @description Everything stored about one decision: its plan, its decision (without the plan) and its settlement.
         */
        DecisionRecord: {
            /**
             * Context Text
             * @description the context the decision was planned for
             */
            context_text: string | null;
            /** Decision */
            decision: {
                [key: string]: unknown;
            } | null;
            /** Decision Id */
            decision_id: string;
            /**
             * Failure
             * @description why a failed decision was withdrawn (None unless failed)
             */
            failure: string | null;
            plan: components["schemas"]["PlanPublic"] | null;
            settlement: components["schemas"]["SettlementPublic"] | null;
            /**
             * Status
             * @description planned: waiting for its drafts; decided; settled; failed: withdrawn before it was decided (its drafting failed, or the server drafting it stopped and its lease ended), `failure` says why
             */
            status: string;
        };
        /** DecisionSummary */
        DecisionSummary: {
            /** Action */
            action: string | null;
            /**
             * Chosen Utility
             * @description the utility of what was played, in utility per decision (null: not settled); after a correction, the corrected one
             */
            chosen_utility: number | null;
            /**
             * Corrections
             * @description how many times its settled outcome was corrected (0: never); the decision shows each
             * @default 0
             */
            corrections: number;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Decision Id */
            decision_id: string;
            /**
             * Decision Time
             * Format: date-time
             */
            decision_time: string;
            /**
             * Failure
             * @description why a failed decision was withdrawn (None unless failed)
             */
            failure: string | null;
            /**
             * Maturity
             * Format: date-time
             */
            maturity: string;
            /**
             * Status
             * @description planned: waiting for its drafts; decided; settled; failed: withdrawn before it was decided (its drafting failed, or the server drafting it stopped and its lease ended), `failure` says why
             * @enum {string}
             */
            status: "planned" | "decided" | "settled" | "failed";
        };
        /** DialPublic */
        DialPublic: {
            /**
             * Combination
             * @description weight of each designed draft in the memory share, in subset order
             */
            combination: number[];
            /**
             * Gains
             * @description predicted gain of each designed subset, in subset order, in utility per decision
             */
            gains: number[];
            /**
             * Log Evidence
             * @description log K_t of the betting e-process omega comes from
             */
            log_evidence: number;
            /**
             * Noise Cost
             * @description estimated utility cost of one draft's noise, in utility per decision (null: no estimate yet)
             */
            noise_cost: number | null;
            /**
             * Trust Weight
             * @description omega in [0, 1]: the share played on memory
             */
            trust_weight: number;
        };
        /**
         * DrafterSettings
         * @description Server drafting: a model among those the operator configured (``MEMTRIAL_LLM_CONFIG``).
         *
         *     The endpoint and its key belong to the operator's configuration; a tenant
         *     never sends a URL or a key.
         */
        DrafterSettings: {
            /**
             * Max Retries
             * @default 2
             */
            max_retries?: number;
            /**
             * Model
             * @description a model that provider allows, e.g. openai/gpt-4o-mini
             */
            model: string;
            /**
             * Provider
             * @description a provider of the server's LLM configuration (GET /v1/llm/providers lists them)
             */
            provider: string;
            /**
             * Temperature
             * @default 0.7
             */
            temperature?: number;
        };
        /** DraftsSubmit */
        DraftsSubmit: {
            /**
             * Drafts
             * @description one draft per designed subset, in the plan's order: for portfolio agents an object of weights naming every asset; for scored agents any JSON (at most the server's MEMTRIAL_MAX_DRAFTS_PER_DECISION, default 64)
             */
            drafts: unknown[];
            /**
             * Reference
             * @description scored agents: the index of the draft that is the conservative reference (default 0, the memory-free draft)
             */
            reference?: number | null;
        };
        /**
         * ErrorBody
         * @description Every error answer: ``{"error": {"code", "message", "field", "errors": [{"field", "message"}, ...]}}``.
         */
        ErrorBody: {
            error: components["schemas"]["ErrorDetail"];
        };
        /** ErrorDetail */
        ErrorDetail: {
            /** Code */
            code: string;
            /**
             * Errors
             * @description every error found, the first first (a validation error lists each field)
             */
            errors: components["schemas"]["ErrorItem"][];
            /**
             * Field
             * @description the first error's field
             */
            field: string | null;
            /**
             * Message
             * @description the first error (the first of errors)
             */
            message: string;
        };
        /** ErrorItem */
        ErrorItem: {
            /**
             * Field
             * @description the field that broke a rule (null: the request as a whole)
             */
            field: string | null;
            /**
             * Message
             * @description what was wrong and the rule it broke
             */
            message: string;
        };
        /** ExperienceBatch */
        ExperienceBatch: {
            /** Experiences */
            experiences: components["schemas"]["ExperienceCreate"][];
        };
        /** ExperienceCreate */
        ExperienceCreate: {
            /**
             * External Id
             * @description the experience's id in your own memory store (unique per agent, compared in Unicode normal form C, in which it is stored): adding one that exists updates its text and metadata instead of duplicating it
             */
            external_id?: string | null;
            /** Metadata */
            metadata?: {
                [key: string]: unknown;
            };
            /** Structured */
            structured?: {
                [key: string]: unknown;
            } | null;
            /** Text */
            text: string;
        };
        /** ExperienceDetail */
        ExperienceDetail: {
            /**
             * Active
             * @description false: retired by hand; a quarantined experience stays active (not retired: status says whether it is retrieved)
             */
            active: boolean;
            /** Contributions */
            contributions: components["schemas"]["ContributionPublic"][];
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * External Id
             * @description the experience's id in the client's own memory store
             */
            external_id: string | null;
            /** Id */
            id: string;
            /** Metadata */
            metadata: {
                [key: string]: unknown;
            };
            /** @description a quarantined experience: the evidence at quarantine */
            quarantine: components["schemas"]["QuarantinePublic"] | null;
            /**
             * Status
             * @description active (retrieved), quarantined (kept out of retrieval by its evidence) or retired (by hand)
             * @default active
             * @enum {string}
             */
            status: "active" | "quarantined" | "retired";
            /** Structured */
            structured: {
                [key: string]: unknown;
            } | null;
            /** Text */
            text: string;
            value: components["schemas"]["ValuePublic"];
            /**
             * Write
             * @description in the answer to an add: created, or (an external_id that existed) updated or unchanged
             */
            write: ("created" | "updated" | "unchanged") | null;
        };
        /**
         * ExperienceList
         * @description A page of experiences in insertion order. Page with ``cursor`` (pass ``next_cursor``;
         *     null on the last page); ``offset`` paging is kept for older clients.
         */
        ExperienceList: {
            /** Items */
            items: components["schemas"]["ExperiencePublic"][];
            /** Limit */
            limit: number;
            /** Next Cursor */
            next_cursor: string | null;
            /** Offset */
            offset: number;
            /** Total */
            total: number;
        };
        /** ExperiencePatch */
        ExperiencePatch: {
            /** Metadata */
            metadata: {
                [key: string]: unknown;
            };
        };
        /** ExperiencePublic */
        ExperiencePublic: {
            /**
             * Active
             * @description false: retired by hand; a quarantined experience stays active (not retired: status says whether it is retrieved)
             */
            active: boolean;
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /**
             * External Id
             * @description the experience's id in the client's own memory store
             */
            external_id: string | null;
            /** Id */
            id: string;
            /** Metadata */
            metadata: {
                [key: string]: unknown;
            };
            /** @description a quarantined experience: the evidence at quarantine */
            quarantine: components["schemas"]["QuarantinePublic"] | null;
            /**
             * Status
             * @description active (retrieved), quarantined (kept out of retrieval by its evidence) or retired (by hand)
             * @default active
             * @enum {string}
             */
            status: "active" | "quarantined" | "retired";
            /** Structured */
            structured: {
                [key: string]: unknown;
            } | null;
            /** Text */
            text: string;
            value: components["schemas"]["ValuePublic"];
            /**
             * Write
             * @description in the answer to an add: created, or (an external_id that existed) updated or unchanged
             */
            write: ("created" | "updated" | "unchanged") | null;
        };
        /** GatePublic */
        GatePublic: {
            /** Alpha */
            alpha: number;
            /** Bets */
            bets: number[];
            /** Min Scores */
            min_scores: number;
            /** Statistic */
            statistic: string;
            /** Test */
            test: string;
        };
        /** GateSettings */
        GateSettings: {
            /**
             * Alpha
             * @default 0.05
             */
            alpha?: number;
            /** Min Scores */
            min_scores?: number | null;
            /**
             * Test
             * @default anytime
             * @enum {string}
             */
            test?: "prequential" | "anytime" | "none";
        };
        /**
         * LogEntryPublic
         * @description One hash-chained entry, exactly as hashed: sha256 of the canonical JSON of
         *     {index, kind, payload, prev_hash} (sorted keys, no spaces) is ``hash``.
         */
        LogEntryPublic: {
            /** Hash */
            hash: string;
            /** Index */
            index: number;
            /** Kind */
            kind: string;
            /** Payload */
            payload: {
                [key: string]: unknown;
            };
            /** Prev Hash */
            prev_hash: string;
        };
        /**
         * LogPage
         * @description A page of the log in index order; entry 0's prev_hash is the gate hash.
         */
        LogPage: {
            /** Gate Hash */
            gate_hash: string;
            /** Items */
            items: components["schemas"]["LogEntryPublic"][];
            /** Limit */
            limit: number;
            /** N Entries */
            n_entries: number;
            /** Next Cursor */
            next_cursor: string | null;
            /**
             * Rescored
             * @description entries in force whose score a later correction's replay changed (that correction's 'rescored' lists the score now), by index (as a string): the index of that correction
             */
            rescored: {
                [key: string]: number;
            };
            /**
             * Superseded
             * @description score entries a correction replaced, and corrections a later correction of the same decision replaced, by index (as a string): the index of the correction that replaced each
             */
            superseded: {
                [key: string]: number;
            };
        };
        /** PlanPublic */
        PlanPublic: {
            /** Decision Id */
            decision_id: string;
            /**
             * Decision Time
             * Format: date-time
             */
            decision_time: string;
            /** @description agents acting by the trust dial: omega, its evidence and how the drafts will be combined */
            dial: components["schemas"]["DialPublic"] | null;
            /**
             * Draft Calls
             * @description the drafts to make for this decision (one LLM call each)
             */
            draft_calls: number | null;
            /** Learner Mode */
            learner_mode: string;
            /**
             * Maturity
             * Format: date-time
             */
            maturity: string;
            /**
             * Predictions
             * @description predicted value of each retrieved experience, by id, in utility per decision
             */
            predictions: {
                [key: string]: number;
            };
            /** Q */
            q: number;
            /**
             * Retrieval
             * @description server: searched by the context's embedding; client: the request's retrieved ids; candidates: picked among the request's candidates by the agent's retrieval mode
             * @default server
             * @enum {string}
             */
            retrieval: "server" | "client" | "candidates";
            /** Retrieved */
            retrieved: components["schemas"]["RetrievedPublic"][];
            /** Status */
            status: string;
            /** Subsets */
            subsets: components["schemas"]["SubsetPublic"][];
            /**
             * Trial
             * @description false: a draft-budget decision that exploits what is known (one draft, listed in subsets) and learns nothing
             * @default true
             */
            trial: boolean;
            trust: components["schemas"]["TrustStatePublic"];
        };
        /** ProviderPublic */
        ProviderPublic: {
            /** Models */
            models: string[];
            /** Provider */
            provider: string;
        };
        /**
         * ProvidersPublic
         * @description Providers an agent's drafter may name (no endpoints, no keys: those stay with the operator).
         */
        ProvidersPublic: {
            /** Providers */
            providers: components["schemas"]["ProviderPublic"][];
        };
        /**
         * QuarantinePublic
         * @description The evidence of a quarantine, as its log entry recorded it (method 4.13).
         */
        QuarantinePublic: {
            /**
             * Changed At
             * @description the decision at which a change of sign was detected, if any
             */
            changed_at: string | null;
            /**
             * Date
             * @description the decision whose settlement quarantined the experience
             */
            date: string | null;
            /**
             * E Value
             * @description the experience's e-value against 'its value is >= 0' at that moment
             */
            e_value: number;
            /**
             * Log Index
             * @description the index of the quarantine entry in the agent's log
             */
            log_index: number | null;
            /**
             * Mean
             * @description their mean, in utility per decision
             */
            mean: number | null;
            /**
             * N
             * @description contributions since the test started
             */
            n: number;
            /**
             * Slot
             * @description j, the order in which the agent started this test
             */
            slot: number;
            /**
             * Threshold
             * @description the e-value its test had to reach: (j + s)(j + s + 1) / ((s + 1) level (r + 1)), j its slot, s the quarantine's spread, r the quarantines the agent made before (0 under fwer) (method 4.13)
             */
            threshold: number;
        };
        /**
         * QuarantineSettings
         * @description The quarantine of credibly harmful experiences (method 4.13) and the detection of stale lessons (4.14).
         */
        QuarantineSettings: {
            /**
             * Change Threshold
             * @description the e-value at which a change of sign of an experience's contributions is detected (its value is then learnt from the change on); above 1
             * @default 1000
             */
            change_threshold?: number;
            /**
             * Clip
             * @description the weighted sign's scale in mean absolute contributions (each contribution counts as sign times min(|c| / (clip * mean |c|), 1)); null: the plain sign test
             * @default 1
             */
            clip?: number | null;
            /**
             * Control
             * @description what level bounds: fdr, the false discovery rate (each quarantine lowers the evidence the later ones need), or fwer, the probability of any wrong quarantine (method 4.13)
             * @default fdr
             * @enum {string}
             */
            control?: "fwer" | "fdr";
            /**
             * Enabled
             * @description test every experience after each settlement and keep those credibly harmful out of retrieval and rank
             * @default true
             */
            enabled?: boolean;
            /**
             * Level
             * @description the bound that control names: on the expected share of wrongly quarantined experiences (value >= 0) among those quarantined (fdr), or on the probability that any is ever quarantined (fwer)
             * @default 0.05
             */
            level?: number;
            /**
             * Spread
             * @description s of the tests' shares of the level, w_j = (s + 1) / ((j + s) (j + s + 1)) for the j-th test the agent starts: 0 favours the first experiences tested, a larger s spreads the level evenly over the first s or so (method 4.13)
             * @default 30
             */
            spread?: number;
        };
        /**
         * QuarantineStatePublic
         * @description An agent's quarantine setting.
         */
        QuarantineStatePublic: {
            /**
             * Change Threshold
             * @description the e-value at which a change of sign is detected
             */
            change_threshold: number;
            /**
             * Clip
             * @description the weighted sign's scale; null: the plain sign test
             */
            clip: number | null;
            /**
             * Control
             * @description what level bounds: fdr (the false discovery rate) or fwer (the probability of any wrong quarantine; an agent made before the setting existed)
             * @default fwer
             */
            control: string;
            /** Enabled */
            enabled: boolean;
            /**
             * Level
             * @description the bound that control names
             */
            level: number;
            /**
             * Spread
             * @description s of the tests' shares of the level (method 4.13)
             * @default 0
             */
            spread: number;
        };
        /**
         * RankedPublic
         * @description One pick of a rank, with why it was picked and its value now.
         */
        RankedPublic: {
            /** External Id */
            external_id: string | null;
            /** Id */
            id: string;
            /**
             * Interval
             * @description the value's normal 90% interval [lower, upper] (the empirical-Bayes one the values show; after a full-Bayes refit they show the refit's), in utility per decision (null: no estimate yet)
             */
            interval: number[] | null;
            /**
             * N
             * @description the contributions its value was learnt from
             */
            n: number;
            /**
             * Reason
             * @description similarity: its similarity alone would pick it; value: its learned value; exploration: its value's uncertainty (the optimism bonus)
             * @enum {string}
             */
            reason: "similarity" | "value" | "exploration";
            /**
             * Score
             * @description similarity plus the trust-weighted value term (equal to similarity with no trust evidence)
             */
            score: number;
            /**
             * Similarity
             * @description the score it was ranked by (the given similarity, or minus its position when none were given)
             */
            similarity: number;
            /**
             * Value
             * @description its value's posterior mean, in utility per decision
             */
            value: number;
        };
        /**
         * RankRequest
         * @description Candidates from your own store, by id or by external id (one of the two), and how many to use.
         */
        RankRequest: {
            /**
             * Candidate External Ids
             * @description as candidate_ids, by the external ids the experiences were added with (compared in Unicode normal form C)
             */
            candidate_external_ids?: string[] | null;
            /**
             * Candidate Ids
             * @description ids of this agent's active experiences, 1 to 100, distinct (in your similarity order when no similarities are given)
             */
            candidate_ids?: string[] | null;
            /**
             * K
             * @description how many to pick, 1 to 100 and at most the candidates
             */
            k: number;
            /**
             * Similarities
             * @description one finite score per candidate, higher is closer, on a cosine's scale (about -1 to 1: the value term spans at most [-1, 1]; null: the given order is the similarity order)
             */
            similarities?: number[] | null;
        };
        /**
         * RankResult
         * @description The candidates to use, best first, at most k; quarantined ones are never picked.
         */
        RankResult: {
            /** Items */
            items: components["schemas"]["RankedPublic"][];
        };
        /** RefitCreate */
        RefitCreate: {
            /**
             * Method
             * @default nuts
             * @enum {string}
             */
            method?: "nuts" | "svi";
        };
        /** RefitPublic */
        RefitPublic: {
            /**
             * Created At
             * Format: date-time
             */
            created_at: string;
            /** Error */
            error: string | null;
            /** Finished At */
            finished_at: string | null;
            /** Job Id */
            job_id: string;
            /** Method */
            method: string;
            /** Posterior */
            posterior: {
                [key: string]: {
                    [key: string]: number;
                };
            } | null;
            /**
             * Status
             * @enum {string}
             */
            status: "queued" | "running" | "done" | "failed";
        };
        /** ReleaseRequest */
        ReleaseRequest: {
            /**
             * Reason
             * @description why the experience is released from quarantine (kept in the log with the evidence)
             */
            reason: string;
        };
        /** RetrievedPublic */
        RetrievedPublic: {
            /** External Id */
            external_id: string | null;
            /** Id */
            id: string;
            /**
             * Score
             * @description cosine similarity to the context (null: the client chose the experiences)
             */
            score: number | null;
            /** Text */
            text: string;
        };
        /**
         * ScorePublic
         * @description A decision's score in force (a correction's, or the one a later correction's replay gave it).
         */
        ScorePublic: {
            /** Decision Id */
            decision_id: string;
            /** Score */
            score: number;
            /**
             * Statistic
             * @description the gate's statistic right after this score (the e-value, or the t-test's p-value; null without a test, or before the t-test has two scores): as the log recorded it, or for an agent with corrections as the gate now holds it, folded along the scores in force
             */
            statistic: number | null;
        };
        /** SearchHit */
        SearchHit: {
            /** External Id */
            external_id: string | null;
            /** Id */
            id: string;
            /** Score */
            score: number;
            /** Text */
            text: string;
        };
        /** SearchRequest */
        SearchRequest: {
            /**
             * K
             * @default 4
             */
            k?: number;
            /** Query */
            query: string;
        };
        /** SearchResult */
        SearchResult: {
            /** Hits */
            hits: components["schemas"]["SearchHit"][];
        };
        /** SettlementPublic */
        SettlementPublic: {
            /**
             * Centred
             * @description each contrast minus the decision's mean contrast, by id, in utility per decision
             */
            centred: {
                [key: string]: number;
            };
            /**
             * Chosen Utility
             * @description the utility of what was played, in utility per decision (null when the decision blended drafts and no rule scored the blend)
             */
            chosen_utility: number | null;
            /**
             * Contribution Labels
             * @description each credited experience's label (its text, shortened, in quotes), by id
             */
            contribution_labels: {
                [key: string]: string;
            };
            /**
             * Contributions
             * @description each experience's contrast, by experience id, in utility per decision
             */
            contributions: {
                [key: string]: number;
            };
            /**
             * Corrections
             * @description outcomes this settlement replaced, oldest first
             */
            corrections: components["schemas"]["CorrectionPublic"][];
            /** Decision Id */
            decision_id: string;
            /**
             * Draft Mean Utility
             * @description the utility of the drafts' mean, in utility per decision (null for a scored decision settled with bare utilities)
             */
            draft_mean_utility: number | null;
            /**
             * Draft Utilities
             * @description each draft's settled utility, in the plan's order, in utility per decision
             */
            draft_utilities: number[];
            /**
             * Explanation
             * @description for readers: each credited experience by its label with its contribution
             * @default
             */
            explanation: string;
            /**
             * Interactions
             * @description the two-factor interaction contrasts, in utility per decision
             */
            interactions: {
                [key: string]: number;
            };
            /** Outcome */
            outcome: unknown;
            /**
             * Reference Utility
             * @description the reference draft's settled utility, in utility per decision
             */
            reference_utility: number;
            /** Rule */
            rule: string | null;
            /** Score */
            score: number | null;
            /**
             * Settled At
             * Format: date-time
             */
            settled_at: string;
            /** Status */
            status: string;
            /** Values */
            values: {
                [key: string]: components["schemas"]["ValuePublic"];
            };
            /**
             * Warnings
             * @description accepted input that looks wrong, e.g. a session return of 50% or more (percentages given as fractions?); empty when none
             */
            warnings: components["schemas"]["WarningPublic"][];
        };
        /** SettleRequest */
        SettleRequest: {
            /**
             * Outcome
             * @description scored: the realised outcome, scored by rule
             */
            outcome?: unknown;
            /**
             * Prices
             * @description portfolio: per asset, entry close then one close per session
             */
            prices?: {
                [key: string]: number[];
            } | null;
            /**
             * Returns
             * @description portfolio: per asset, one simple return per session
             */
            returns?: {
                [key: string]: number[];
            } | null;
            /**
             * Rule
             * @description scored: brier or log (probability forecasts; the outcome names an outcome), exact (answer equals outcome), abs_error (numbers)
             */
            rule?: ("brier" | "log" | "exact" | "abs_error") | null;
            /**
             * Settled At
             * @description when the outcome became known; default: the maturity (which must have passed)
             */
            settled_at?: string | null;
            /**
             * Utilities
             * @description scored: one utility per draft, in the plan's order (higher is better)
             */
            utilities?: number[] | null;
        };
        /** SubsetPublic */
        SubsetPublic: {
            /** Experience Ids */
            experience_ids: string[];
            /**
             * External Ids
             * @description the experiences' external ids, in order
             */
            external_ids: (string | null)[];
            /** Index */
            index: number;
            /** Mask */
            mask: number;
            /** Texts */
            texts: string[];
        };
        /**
         * TrustPublic
         * @description The gate, its state, and its most recent scores (oldest first) with the statistic after each;
         *     ``n_scores`` counts them all. The raw log is paged at ``.../trust/log``.
         */
        TrustPublic: {
            gate: components["schemas"]["GatePublic"];
            /** Gate Hash */
            gate_hash: string;
            /** N Scores */
            n_scores: number;
            /** Scores */
            scores: components["schemas"]["ScorePublic"][];
            state: components["schemas"]["TrustStatePublic"];
        };
        /** TrustStatePublic */
        TrustStatePublic: {
            /** Is Open */
            is_open: boolean;
            /** Mean Score */
            mean_score: number | null;
            /** N Scored */
            n_scored: number;
            /** Statistic */
            statistic: number | null;
            /** Status */
            status: string;
            /** Test */
            test: string;
            /** Threshold */
            threshold: number | null;
        };
        /**
         * ValueEntryPublic
         * @description A value on ``/values``, with what it is the value of.
         */
        ValueEntryPublic: {
            /**
             * Active
             * @description false: retired by hand; a quarantined experience stays active (not retired: status says whether it is retrieved)
             */
            active: boolean;
            /**
             * Changed At
             * @description the decision at which a change of sign of the experience's contributions was detected (its value, interval and n are learnt from there on); null: none
             */
            changed_at: string | null;
            /**
             * External Id
             * @description the experience's id in the client's memory store
             */
            external_id: string | null;
            /**
             * Interval
             * @description where lower, upper and p_positive come from (null: no estimate yet)
             */
            interval: ("empirical_bayes" | "full_bayes") | null;
            /**
             * Label
             * @description what a reader sees: the text, shortened, in quotes (else the external id, else the id)
             */
            label: string;
            /**
             * Lower
             * @description the 90% interval's lower end, in utility per decision
             */
            lower: number | null;
            /**
             * Mean
             * @description posterior mean value, in utility per decision
             */
            mean: number;
            /**
             * N
             * @description settlements that credited the experience (since a detected change, if any)
             */
            n: number;
            /**
             * P Positive
             * @description P(v > 0), a probability
             */
            p_positive: number | null;
            /**
             * Sd
             * @description posterior sd, in utility per decision (null: no estimate yet)
             */
            sd: number | null;
            /**
             * Status
             * @description active (retrieved), quarantined (kept out of retrieval by its evidence) or retired (by hand)
             * @enum {string}
             */
            status: "active" | "quarantined" | "retired";
            /**
             * Text
             * @description the experience's text
             */
            text: string;
            /**
             * Upper
             * @description the 90% interval's upper end, in utility per decision
             */
            upper: number | null;
        };
        /**
         * ValuePublic
         * @description An experience's value in utility per decision (how much it changes a decision's settled utility:
         *     for a portfolio a fraction of the book, 0.01 = 1 percentage point; for a scored decision the
         *     scoring rule's units): posterior mean and sd, a central 90% interval and P(v > 0).
         *
         *     The interval and P(v > 0) are empirical Bayes (normal posterior) as soon as there is an sd; on
         *     ``/values`` after a full-Bayes refit they are the refit's while it fits the agent's data as they are (no
         *     settlement, correction or deletion since it read them; ``interval`` says which).
         *     ``n`` counts the settlements that credited the experience. After a detected change of sign (method
         *     4.14) the value is the one learnt since the change, as value-aware retrieval reads it: the mean of the
         *     contributions since then, their standard error, and ``n`` their number.
         */
        ValuePublic: {
            /**
             * Interval
             * @description where lower, upper and p_positive come from (null: no estimate yet)
             */
            interval: ("empirical_bayes" | "full_bayes") | null;
            /**
             * Lower
             * @description the 90% interval's lower end, in utility per decision
             */
            lower: number | null;
            /**
             * Mean
             * @description posterior mean value, in utility per decision
             */
            mean: number;
            /**
             * N
             * @description settlements that credited the experience (since a detected change, if any)
             */
            n: number;
            /**
             * P Positive
             * @description P(v > 0), a probability
             */
            p_positive: number | null;
            /**
             * Sd
             * @description posterior sd, in utility per decision (null: no estimate yet)
             */
            sd: number | null;
            /**
             * Upper
             * @description the 90% interval's upper end, in utility per decision
             */
            upper: number | null;
        };
        /**
         * ValuesPublic
         * @description Every valued experience by id, best first.
         */
        ValuesPublic: {
            /** Learner Mode */
            learner_mode: string;
            /** Values */
            values: {
                [key: string]: components["schemas"]["ValueEntryPublic"];
            };
        };
        /** VerifyPublic */
        VerifyPublic: {
            /** First Invalid */
            first_invalid: number | null;
            /** N Entries */
            n_entries: number;
            /** Ok */
            ok: boolean;
            /** Reason */
            reason: string | null;
        };
        /**
         * WarningPublic
         * @description Input that was accepted but looks wrong: the field and what to check.
         */
        WarningPublic: {
            /** Field */
            field: string;
            /** Message */
            message: string;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    healthz_healthz_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        [key: string]: string;
                    };
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    metrics_metrics_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    readyz_readyz_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        [key: string]: string;
                    };
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_agents_v1_agents_get: {
        parameters: {
            query?: {
                /** @description next_cursor of the previous page */
                cursor?: string | null;
                /** @description rows per page (1..200) */
                limit?: number;
                /** @description only agents with exactly this name */
                name?: string | null;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentList"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_agent_v1_agents_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description any unique string (letters, digits, _ . : -) to make a retry of this request safe; kept for 24 h */
                "Idempotency-Key"?: string | null;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentCreate"];
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_agent_v1_agents__agent_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_agent_v1_agents__agent_id__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    update_agent_v1_agents__agent_id__patch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["AgentPatch"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AgentPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_decisions_v1_agents__agent_id__decisions_get: {
        parameters: {
            query?: {
                /** @description next_cursor of the previous page */
                cursor?: string | null;
                /** @description rows per page (1..200) */
                limit?: number;
                /** @description only decisions maturing before this time (aware ISO 8601) */
                maturity_before?: string | null;
                /** @description only decisions in this state */
                status?: ("planned" | "decided" | "settled" | "failed") | null;
            };
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DecisionList"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    create_decision_v1_agents__agent_id__decisions_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description any unique string (letters, digits, _ . : -) to make a retry of this request safe; kept for 24 h */
                "Idempotency-Key"?: string | null;
            };
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DecisionCreate"];
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PlanPublic"] | components["schemas"]["DecisionPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_decision_v1_agents__agent_id__decisions__decision_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
                decision_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DecisionRecord"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    correct_decision_v1_agents__agent_id__decisions__decision_id__corrections_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description any unique string (letters, digits, _ . : -) to make a retry of this request safe; kept for 24 h */
                "Idempotency-Key"?: string | null;
            };
            path: {
                agent_id: string;
                decision_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["CorrectionRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SettlementPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    submit_drafts_v1_agents__agent_id__decisions__decision_id__drafts_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description any unique string (letters, digits, _ . : -) to make a retry of this request safe; kept for 24 h */
                "Idempotency-Key"?: string | null;
            };
            path: {
                agent_id: string;
                decision_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["DraftsSubmit"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DecisionPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    settle_decision_v1_agents__agent_id__decisions__decision_id__settle_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description any unique string (letters, digits, _ . : -) to make a retry of this request safe; kept for 24 h */
                "Idempotency-Key"?: string | null;
            };
            path: {
                agent_id: string;
                decision_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SettleRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SettlementPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_experiences_v1_agents__agent_id__experiences_get: {
        parameters: {
            query?: {
                active?: boolean | null;
                /** @description next_cursor of the previous page */
                cursor?: string | null;
                /** @description only the experience with this external id (compared in Unicode normal form C) */
                external_id?: string | null;
                limit?: number;
                /** @description legacy paging; prefer cursor */
                offset?: number;
                /** @description only experiences in this state: active (retrieved), quarantined (kept out of retrieval by their evidence) or retired */
                status?: ("active" | "quarantined" | "retired") | null;
            };
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExperienceList"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    add_experiences_v1_agents__agent_id__experiences_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description any unique string (letters, digits, _ . : -) to make a retry of this request safe; kept for 24 h */
                "Idempotency-Key"?: string | null;
            };
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ExperienceCreate"] | components["schemas"]["ExperienceBatch"];
            };
        };
        responses: {
            /** @description Successful Response */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExperiencePublic"] | components["schemas"]["ExperienceList"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_experience_v1_agents__agent_id__experiences__experience_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
                experience_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExperienceDetail"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    delete_experience_v1_agents__agent_id__experiences__experience_id__delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
                experience_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    update_metadata_v1_agents__agent_id__experiences__experience_id__patch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
                experience_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ExperiencePatch"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExperiencePublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    release_experience_v1_agents__agent_id__experiences__experience_id__release_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description any unique string (letters, digits, _ . : -) to make a retry of this request safe; kept for 24 h */
                "Idempotency-Key"?: string | null;
            };
            path: {
                agent_id: string;
                experience_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ReleaseRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExperiencePublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    retire_experience_v1_agents__agent_id__experiences__experience_id__retire_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
                experience_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ExperiencePublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    rank_experiences_v1_agents__agent_id__experiences_rank_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RankRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RankResult"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    search_experiences_v1_agents__agent_id__experiences_search_post: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SearchRequest"];
            };
        };
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchResult"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    start_refit_v1_agents__agent_id__refit_post: {
        parameters: {
            query?: never;
            header?: {
                /** @description any unique string (letters, digits, _ . : -) to make a retry of this request safe; kept for 24 h */
                "Idempotency-Key"?: string | null;
            };
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["RefitCreate"] | null;
            };
        };
        responses: {
            /** @description Successful Response */
            202: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RefitPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_refit_v1_agents__agent_id__refit__job_id__get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
                job_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RefitPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_trust_v1_agents__agent_id__trust_get: {
        parameters: {
            query?: {
                /** @description how many of the most recent scores */
                limit?: number;
            };
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TrustPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_log_v1_agents__agent_id__trust_log_get: {
        parameters: {
            query?: {
                /** @description next_cursor of the previous page */
                cursor?: string | null;
                /** @description entries per page (1..1000) */
                limit?: number;
            };
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["LogPage"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    verify_trust_v1_agents__agent_id__trust_verify_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["VerifyPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    get_values_v1_agents__agent_id__values_get: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                agent_id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ValuesPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list_providers_v1_llm_providers_get: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful Response */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProvidersPublic"];
                };
            };
            /** @description missing, unknown or revoked API key */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description no such resource for this tenant */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the request body paused too long (MEMTRIAL_BODY_TIMEOUT_SECONDS) */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description conflict with the agent's state (time order, maturity, a different payload) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description request body too large */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description invalid input; the message names the field and the rule */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description rate limit for this key reached */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the drafter failed or answered malformed drafts */
            502: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description the database is unavailable (code database_unavailable), or another request held this agent's write lock past the lock timeout (code agent_busy): both carry Retry-After and nothing was written; or the server stopped before the request finished (code server_stopping, with Retry-After: send it again with the same Idempotency-Key) */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
