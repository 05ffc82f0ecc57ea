"""Per-layer KV-cache geometry from a model's text config: which layers own a cache, with what shape.

The input is the decoder part of a config.json as planner.config validated it (a dict; family rules such
as Gemma 3's layer pattern already applied). The output is one `LayerKV` per decoder
layer. KV bytes per token is the sum over layers that own a cache; `hidden_size / num_attention_heads`
is never used as a head dim (DESIGN.md, "Facts the planner must get right"; seed article §"E2B is a
strange checkpoint", fact 6: Gemma 4 E2B would get 192 instead of 256).

Fields read, by family (names as in the published config.json files and transformers 5.19 classes):
  num_hidden_layers, num_key_value_heads, head_dim (planner.config fills them by the family's rule),
  layer_types ('full_attention' / 'sliding_attention' / 'chunked_attention'), sliding_window,
  attention_chunk_size (Llama 4 chunked local layers: recorded as the layer's window),
  use_sliding_window + max_window_layers (Qwen2/Qwen3), global_head_dim and num_global_key_value_heads
  (Gemma 4 full layers, as transformers 5.19's per-layer overrides apply them), attention_k_eq_v
  (Gemma 4), num_kv_shared_layers (Gemma 3n, Gemma 4: the last n layers read the cache of the last
  earlier layer of the same attention type); kv_lora_rank + qk_rope_head_dim for MLA (one latent per
  token per layer), with a lightning indexer's K cache beside it for a sparse-attention one (index_topk).
A field the geometry needs that is missing or of an unknown kind raises ConfigError naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from onechip.errors import ConfigError
from onechip.planner import recurrent
from onechip.schemas.plan import LayerKV

FULL = "full"
SLIDING = "sliding"
# A layer whose only cache is a recurrent state per request (Mamba / linear attention; planner.recurrent).
MAMBA = "mamba"
# Llama 4's chunked local attention: a layer attends within its attention_chunk_size chunk only, so its
# cache holds at most one chunk (plus the tokens of one scheduler step) per request. Its window is the chunk.
CHUNKED = "chunked"
# A decoder layer with no attention at all (Nemotron NAS's block_configs[i].attention.no_op: vLLM's
# DeciLMDecoderLayer builds no Attention there, vllm/model_executor/models/nemotron_nas.py lines 140-160 of the
# 0.34.0 sdist), so no KV cache spec and no cache; planner.config writes it as the layer type 'no_attention'.
NO_ATTENTION = "none"

# config layer_types spellings -> our kinds.
LAYER_TYPE_NAMES = {
    "full_attention": FULL,
    "attention": FULL,
    "global": FULL,
    "sliding_attention": SLIDING,
    "sliding_window_attention": SLIDING,
    "local": SLIDING,
    "chunked_attention": CHUNKED,
    "no_attention": NO_ATTENTION,
}


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for positive b, in integers (vLLM's vllm.utils cdiv)."""
    return -(-a // b)


def pow2_at_least(n: int) -> int:
    """The least power of two >= n (1 for n <= 1)."""
    return 1 << max(0, (n - 1).bit_length())


def pad_vocab_size(vocab: int, pad: int = 64) -> int:
    """The vocabulary rows vLLM's embedding and LM head allocate: `vocab` rounded up to a multiple of `pad`
    (vllm/model_executor/layers/vocab_parallel_embedding.py pad_vocab_size, DEFAULT_VOCAB_PADDING_SIZE 64)."""
    return cdiv(vocab, pad) * pad


def window_blocks(kind: str, window: int, batch: int, context: int, block: int) -> int:
    """Blocks one request of `context` tokens holds in a windowed layer under vLLM's v1 KV manager
    (vllm/v1/kv_cache_interface.py): SlidingWindowSpec cdiv(min(window - 1 + batch, context), block) + 1;
    ChunkedLocalAttentionSpec cdiv(min(chunk + batch, context), block) (max_admission_blocks_per_request).
    `batch` is max_num_batched_tokens."""
    if kind == CHUNKED:
        return cdiv(min(window + batch, context), block)
    return cdiv(min(window - 1 + batch, context), block) + 1


@dataclass(frozen=True)
class SparseMlaBytes:
    """Per-GPU bytes per token per layer of a sparse-attention MLA model's caches (planner.core._sparse_mla):
    `latent_bytes` of its latent where the cache format fixes them ('fp8_ds_mla': 656; a plain fp8 cache the
    engine chose: 576; None: kv_lora_rank + qk_rope_head_dim elements of the KV dtype), `indexer_bytes` of its
    lightning indexer's K cache, which the layers of `no_indexer` (IndexCache: they reuse a preceding layer's top-k)
    do not build."""

    latent_bytes: int | None
    indexer_bytes: int
    no_indexer: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Geometry:
    """The per-layer table plus the facts the budget needs.

    layers: one LayerKV per decoder layer, in order; bytes_per_token is at the dtype the caller gave.
    kv_bytes_per_token: sum of layers[i].bytes_per_token (the engine's accounting: every cache-owning
        layer holds every token of a request, because vLLM's paged pool sizes all groups alike).
    """

    layers: list[LayerKV]
    raw_kv_heads: frozenset[int] = frozenset()  # KV heads before tensor-parallel padding

    @property
    def kv_bytes_per_token(self) -> int:
        return sum(layer.bytes_per_token for layer in self.layers)

    @property
    def cache_layers(self) -> int:
        return sum(1 for layer in self.layers if layer.owns_cache)

    def bytes_per_sequence(self, context_tokens: int, *, windowed: bool = True) -> int:
        """KV bytes one request of `context_tokens` occupies.

        windowed=True caps each sliding layer at its window (what a window-aware cache holds at long
        context); windowed=False charges every cache-owning layer the full context (what an engine
        that does not window sliding layers holds).
        """
        total = 0
        for layer in self.layers:
            total += layer.state_bytes  # a recurrent state is one per request, whatever the context
            if not layer.owns_cache:
                continue
            tokens = context_tokens
            if windowed and layer.sliding_window is not None:
                tokens = min(context_tokens, layer.sliding_window)
            total += tokens * layer.bytes_per_token
        return total


def _get(cfg: Any, name: str, default: Any = None) -> Any:
    if isinstance(cfg, dict):
        return cfg.get(name, default)
    return getattr(cfg, name, default)


def require_int(cfg: Any, name: str, family: str) -> int:
    """A positive integer field of a model config, or a one-line ConfigError naming it."""
    value = _get(cfg, name)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(
            f"model config ({family}): field '{name}' is missing or not a positive integer "
            f"(got {value!r}); the KV geometry needs it"
        )
    return value


def layer_kinds(cfg: Any, family: str) -> list[str]:
    """Return FULL/SLIDING/CHUNKED (NO_ATTENTION) per decoder layer.

    Order of evidence: `layer_types` when the config has it (Gemma 2/3/3n/4, gpt-oss, Mistral in
    transformers 5.x); else Qwen2/Qwen3's `use_sliding_window` + `max_window_layers` (layers at index
    >= max_window_layers slide, transformers Qwen3Config docstring); else a set `sliding_window` with
    no layer_types means every layer slides (Mistral 7B v0.1 style); else all layers are full.
    Raises ConfigError for a layer type it cannot interpret, or a layer_types of the wrong length.
    """
    n = require_int(cfg, "num_hidden_layers", family)
    types = _get(cfg, "layer_types")
    if types is not None:
        if len(types) != n:
            raise ConfigError(
                f"model config ({family}): field 'layer_types' has {len(types)} entries but num_hidden_layers is {n}"
            )
        kinds = []
        for t in types:
            if t not in LAYER_TYPE_NAMES:
                raise ConfigError(
                    f"model config ({family}): field 'layer_types' has an attention type "
                    f"the planner cannot interpret: {t!r}"
                )
            kinds.append(LAYER_TYPE_NAMES[t])
        return kinds
    window = _get(cfg, "sliding_window")
    if _get(cfg, "use_sliding_window") is not None:  # Qwen2 / Qwen3 family
        if not _get(cfg, "use_sliding_window") or window is None:
            return [FULL] * n
        first = _get(cfg, "max_window_layers", n)
        return [SLIDING if i >= first else FULL for i in range(n)]
    if window is not None:
        return [SLIDING] * n
    return [FULL] * n


def layer_kv_heads(cfg: Any, kind: str, index: int) -> tuple[str, Any]:
    """(the field layer `index` of `kind` takes its KV heads from, their count as the config has it, unchecked):
    num_key_value_heads; on a Gemma 4 full layer with attention_k_eq_v, num_global_key_value_heads when set; a
    saved `per_layer_config` entry's over both (transformers configuration_gemma4.py per-layer overrides; vLLM
    0.31.0 gemma4_layer_config, which Gemma4DecoderLayer passes to its attention), named by the entry's `field`
    where planner.config derived it from another field of the file (Nemotron NAS's n_heads_in_group)."""
    override = (_get(cfg, "per_layer_config") or {}).get(str(index)) or {}
    if override.get("num_key_value_heads") is not None:
        field = override.get("field") or f"per_layer_config.{index}.num_key_value_heads"
        return str(field), override["num_key_value_heads"]
    if kind == FULL and _get(cfg, "attention_k_eq_v") and _get(cfg, "num_global_key_value_heads"):
        return "num_global_key_value_heads", _get(cfg, "num_global_key_value_heads")
    return "num_key_value_heads", _get(cfg, "num_key_value_heads")


def _layer_shape(cfg: Any, kind: str, family: str, index: int) -> tuple[int, int]:
    """(head_dim, KV heads) of a layer from the flat fields (planner.config applied the family rules):
    Gemma 4 full layers take global_head_dim (transformers configuration_gemma4.py per-layer overrides), a saved
    `per_layer_config` entry its own; KV heads as layer_kv_heads gives them."""
    override = (_get(cfg, "per_layer_config") or {}).get(str(index))
    dim = (_get(cfg, "global_head_dim") if kind == FULL else None) or _get(cfg, "head_dim")
    heads = layer_kv_heads(cfg, kind, index)[1]
    if override:  # transformers 5.19's saved per-layer overrides win (planner.config checked them)
        dim = override.get("head_dim", dim)
    if not isinstance(dim, int) or dim <= 0:
        raise ConfigError(
            f"model config ({family}): field 'head_dim' is missing for layer {index}; the "
            "planner never derives it from hidden_size / num_attention_heads"
        )
    if not isinstance(heads, int) or heads <= 0:
        raise ConfigError(f"model config ({family}): field 'num_key_value_heads' is missing for layer {index}")
    return dim, heads


def _layer_v_dim(cfg: Any, index: int, dim: int) -> int:
    """V's per-head width of layer `index`: its `per_layer_config` entry's v_head_dim (MiMo-V2's K and V widths differ,
    planner.config._mimo_v2_fields), else `dim`, K's: vLLM's Attention caches head_size_v = head_size unless the model
    passes another (vllm/v1/kv_cache_interface.py AttentionSpec.__post_init__, 0.34.0 sdist)."""
    override = (_get(cfg, "per_layer_config") or {}).get(str(index)) or {}
    return int(override.get("v_head_dim") or dim)


def mla_geometry(
    cfg: Any, *, kv_dtype_bytes: float, tensor_parallel_size: int, family: str, sparse: SparseMlaBytes | None = None
) -> Geometry:
    """Multi-head latent attention (DeepSeek V2/V3, Kimi K2): each layer caches one latent of
    kv_lora_rank + qk_rope_head_dim elements per token, no separate K and V, no heads
    (vllm/model_executor/layers/mla.py; DeepSeek-V3.1: 61 x 576 x 2 B = 70,272 B/token, 10.72 GiB at
    163,840 tokens, issue 12). The latent is not split by tensor parallelism: every rank holds it, so
    the total over ranks is TP x the latent (recorded as one 'head' replicated TP times). A sparse-attention
    model (`sparse`, DeepSeek-V3.2 / GLM-5: config index_topk) caches the latent in its cache format's bytes and,
    beside it, its lightning indexer's K (indexer_bytes_per_token) on each layer that builds an indexer, both on every
    rank (planner.core._sparse_mla)."""
    n = require_int(cfg, "num_hidden_layers", family)
    dim = require_int(cfg, "kv_lora_rank", family) + require_int(cfg, "qk_rope_head_dim", family)
    per_token = int(tensor_parallel_size * dim * kv_dtype_bytes)
    indexer, skipped = 0, frozenset[int]()
    if sparse is not None:
        indexer, skipped = tensor_parallel_size * sparse.indexer_bytes, sparse.no_indexer
        latent = sparse.latent_bytes if sparse.latent_bytes is not None else int(dim * kv_dtype_bytes)
        per_token = tensor_parallel_size * latent
    layers = [
        LayerKV(
            index=i,
            attention_type=FULL,
            kv_heads=tensor_parallel_size,
            head_dim=dim,
            latent=True,
            owns_cache=True,
            bytes_per_token=per_token + (0 if i in skipped else indexer),
            indexer_bytes_per_token=0 if i in skipped else indexer,
        )
        for i in range(n)
    ]
    return Geometry(layers=layers, raw_kv_heads=frozenset({1}))


def kv_geometry(
    cfg: Any,
    *,
    kv_dtype_bytes: float,
    tensor_parallel_size: int = 1,
    family: str | None = None,
    state_bytes_per_gpu: int = 0,
    mtp_layers: int = 0,
    head_dim_multiple: int = 1,
    head_dims_unpadded: frozenset[int] = frozenset(),
    sparse_mla: SparseMlaBytes | None = None,
    kv_scale_bytes: int = 0,
) -> Geometry:
    """Build the per-layer KV table for a decoder text config.

    cfg: transformers text config (or dict with the same keys).
    kv_dtype_bytes: bytes per cached element as the engine stores it (2 for bf16/fp16, 4 for float32,
        1 for fp8 where the engine packs it; the engine rules decide, not this function).
    tensor_parallel_size: KV heads are padded up to a multiple of it (vLLM replicates a KV head across
        ranks when heads < TP; seed article fact 5: 1 KV head at TP=4 costs 4x). Bytes are totals over
        all ranks.
    state_bytes_per_gpu: a hybrid family's recurrent state per layer on one GPU (planner.recurrent.state_bytes);
        its layers are laid out by hybrid_geometry, with `mtp_layers` full-attention MTP layers after them.
    head_dim_multiple: attention layers cache head_dim padded up to a multiple of it, except a head_dim in
        `head_dims_unpadded` (vllm-tpu: tpu_inference/utils.py get_padded_head_dim, applied per layer in
        runner/kv_cache_manager.py get_kv_cache_spec); 1: as the config has it.
    sparse_mla: an MLA model's sparse-attention caches (mla_geometry); None: a dense model.
    kv_scale_bytes: bytes a cached token holds per (padded) KV head beside its elements (rules.kv_scale_bytes_per_head:
        the float32 K and V scales of a per-token-head KV dtype); not modelled for MLA latents (ConfigError).
    Returns Geometry. Raises ConfigError naming the field it could not interpret.
    """
    family = family or str(_get(cfg, "model_type", "unknown"))
    if tensor_parallel_size < 1:
        raise ConfigError(f"tensor_parallel_size must be >= 1, got {tensor_parallel_size}")
    if family in recurrent.HYBRID_FAMILIES:
        return hybrid_geometry(cfg, family, kv_dtype_bytes, tensor_parallel_size, state_bytes_per_gpu, mtp_layers,
                               kv_scale_bytes=kv_scale_bytes)  # fmt: skip
    if _get(cfg, "kv_lora_rank") is not None and kv_scale_bytes:
        raise ConfigError(f"model config ({family}): a per-token-head KV dtype is not planned for MLA latents")
    if _get(cfg, "kv_lora_rank") is not None:
        return mla_geometry(cfg, kv_dtype_bytes=kv_dtype_bytes, tensor_parallel_size=tensor_parallel_size,
                            family=family, sparse=sparse_mla)  # fmt: skip
    n = require_int(cfg, "num_hidden_layers", family)
    kinds = layer_kinds(cfg, family)
    k_eq_v = bool(_get(cfg, "attention_k_eq_v", False))
    window = _get(cfg, "sliding_window")
    if SLIDING in kinds and not isinstance(window, int):
        raise ConfigError(
            f"model config ({family}): field 'sliding_window' is missing but layer_types has sliding layers"
        )
    chunk = _get(cfg, "attention_chunk_size")
    if CHUNKED in kinds and (not isinstance(chunk, int) or isinstance(chunk, bool) or chunk <= 0):
        raise ConfigError(
            f"model config ({family}): field 'attention_chunk_size' is missing but layer_types has chunked layers"
        )
    shared = _get(cfg, "num_kv_shared_layers", 0) or 0
    if not 0 <= shared < n:
        raise ConfigError(f"model config ({family}): field 'num_kv_shared_layers' = {shared} is outside [0, {n})")
    first_shared = n - shared

    owners = _cache_owners(kinds, first_shared, family)
    return _per_layer(cfg, kinds, owners, family, window=window, chunk=chunk, k_eq_v=k_eq_v,
                      tp=tensor_parallel_size, kv_dtype_bytes=kv_dtype_bytes, kv_scale_bytes=kv_scale_bytes,
                      dim_multiple=head_dim_multiple, dims_unpadded=head_dims_unpadded)  # fmt: skip


def _cache_owners(kinds: list[str], first_shared: int, family: str) -> list[int | None]:
    """Per layer: None when it owns its cache, else the last earlier layer of its type it reads (Gemma 3n/4
    num_kv_shared_layers: the last n layers share). Raises ConfigError when no such layer exists."""
    owners: list[int | None] = []
    last_owner: dict[str, int] = {}
    for i, kind in enumerate(kinds):
        if i < first_shared:
            last_owner[kind] = i
            owners.append(None)
        elif kind in last_owner:
            owners.append(last_owner[kind])
        else:
            raise ConfigError(
                f"model config ({family}): field 'num_kv_shared_layers' makes layer {i} "
                f"share a {kind} cache, but no earlier layer of that type owns one"
            )
    return owners


def _per_layer(
    cfg: Any,
    kinds: list[str],
    owners: list[int | None],
    family: str,
    *,
    window: Any,
    chunk: Any,
    k_eq_v: bool,
    tp: int,
    kv_dtype_bytes: float,
    kv_scale_bytes: int = 0,
    dim_multiple: int = 1,
    dims_unpadded: frozenset[int] = frozenset(),
) -> Geometry:
    """The LayerKV table: KV heads padded up to a multiple of `tp`, head_dim up to a multiple of `dim_multiple`
    (unless in `dims_unpadded`), bytes per token for cache owners."""
    layers: list[LayerKV] = []
    raw_heads: set[int] = set()
    for i, kind in enumerate(kinds):
        if kind == NO_ATTENTION:  # no attention module: no cache, nothing to share
            layers.append(LayerKV(index=i, attention_type=kind, kv_heads=0, head_dim=0, owns_cache=False,
                                  bytes_per_token=0))  # fmt: skip
            continue
        dim, heads_i = _layer_shape(cfg, kind, family, i)
        v_dim = _layer_v_dim(cfg, i, dim)
        if dim not in dims_unpadded:
            dim, v_dim = cdiv(dim, dim_multiple) * dim_multiple, cdiv(v_dim, dim_multiple) * dim_multiple
        raw_heads.add(heads_i)
        padded = cdiv(heads_i, tp) * tp
        owns = owners[i] is None
        # vLLM's attention layers write both a K and a V cache even when the model sets V = K, so
        # attention_k_eq_v (full layers only, modeling_gemma4.py) is recorded but not discounted
        # (E2B has it off; seed article fact 4). A token takes KV heads x (K + V widths) elements
        # (kv_cache_interface.py AttentionSpec.state_content_size_bytes, 0.34.0 sdist).
        per_token = int(padded * (dim + v_dim) * kv_dtype_bytes) + padded * kv_scale_bytes if owns else 0
        layers.append(
            LayerKV(
                index=i,
                attention_type=kind,
                kv_heads=padded,
                head_dim=dim,
                v_head_dim=v_dim if v_dim != dim else None,
                k_eq_v=k_eq_v and kind == FULL,
                owns_cache=owns,
                shares_from=owners[i],
                sliding_window=window if kind == SLIDING else chunk if kind == CHUNKED else None,
                bytes_per_token=per_token,
            )
        )
    return Geometry(layers=layers, raw_kv_heads=frozenset(raw_heads))


def hybrid_geometry(
    cfg: Any,
    family: str,
    kv_dtype_bytes: float,
    tp: int,
    state_bytes_per_gpu: int,
    mtp_layers: int = 0,
    kv_scale_bytes: int = 0,
) -> Geometry:
    """Attention + recurrent layers (planner.recurrent.layer_roles): attention layers cache K and V of the
    config's KV heads (padded to `tp`) x head_dim per token; recurrent layers hold `state_bytes_per_gpu` per
    request on every GPU (recorded over all ranks); a Falcon-H1 layer holds both. `mtp_layers` MTP layers
    (speculative decoding) follow as full-attention layers of the same shape (planner.recurrent docstring). A
    Kimi-Linear attention layer is MLA: one latent of kv_lora_rank + qk_rope_head_dim per token on every rank, as
    mla_geometry records it."""
    if state_bytes_per_gpu <= 0:
        raise ConfigError(f"model config ({family}): a hybrid model needs its recurrent state size")
    layers: list[LayerKV] = []
    raw_heads: set[int] = set()
    roles = recurrent.layer_roles(cfg, family) + [(True, False)] * mtp_layers
    latent = family in recurrent.KDA_FAMILIES
    if latent and kv_scale_bytes:
        raise ConfigError(f"model config ({family}): a per-token-head KV dtype is not planned for MLA latents")
    if latent:
        dim_mla = require_int(cfg, "kv_lora_rank", family) + require_int(cfg, "qk_rope_head_dim", family)
    for i, (attention, state) in enumerate(roles):
        if latent:  # kv_heads = tp (the latent replicated on every rank); raw heads 1, as mla_geometry
            dim, heads = (dim_mla, 1) if attention else (0, 0)
        else:
            dim, heads = _layer_shape(cfg, FULL, family, i) if attention else (0, 0)
        padded = cdiv(heads, tp) * tp
        if attention:
            raw_heads.add(heads)
        layers.append(
            LayerKV(
                index=i,
                attention_type=FULL if attention else MAMBA,
                kv_heads=padded,
                head_dim=dim,
                latent=latent and attention,
                owns_cache=attention or state,
                bytes_per_token=int((1 if latent else 2) * padded * dim * kv_dtype_bytes) + padded * kv_scale_bytes,
                state_bytes=state_bytes_per_gpu * tp if state else 0,
                state_kind=recurrent.vllm_state_kind(family) if state and not attention else None,
            )
        )
    return Geometry(layers=layers, raw_kv_heads=frozenset(raw_heads))
