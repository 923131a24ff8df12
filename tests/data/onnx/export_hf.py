"""How the Hugging Face fixtures beside this file were made: tiny randomly initialized GPT-2,
Llama (grouped-query attention, rotary embeddings, RMSNorm, SiLU), T5-encoder, BERT, RoBERTa
and OPT models (the last two count positions with a CumSum) from transformers 4.57.6, exported
by torch 2.14.1's dynamo exporter (onnxscript 0.7.2) with a symbolic batch and sequence;
inputs: token ids and an attention mask. Llama and BERT also at opset 23, where attention is one
Attention op. Not run by the tests: run it by hand in an
environment with torch and transformers, from this folder."""

import onnx
import torch
import transformers

torch.manual_seed(0)
models = {
    "gpt2": transformers.GPT2Model(transformers.GPT2Config(
        vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=32)),
    "llama": transformers.LlamaModel(transformers.LlamaConfig(
        vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)),
    "t5_encoder": transformers.T5EncoderModel(transformers.T5Config(
        vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4)),
    "bert": transformers.BertModel(transformers.BertConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=32)),
    "roberta": transformers.RobertaModel(transformers.RobertaConfig(
        vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=40)),
    "opt": transformers.OPTModel(transformers.OPTConfig(
        vocab_size=64, hidden_size=32, ffn_dim=64, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=32, word_embed_proj_dim=32)),
}


class Hidden(torch.nn.Module):
    """The last hidden state, without the key-value cache."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        causal = type(self.model).__name__ in ("GPT2Model", "LlamaModel", "OPTModel")
        extra = {"use_cache": False} if causal else {}
        return self.model(input_ids=ids, attention_mask=mask, **extra).last_hidden_state


ids = torch.randint(0, 64, (2, 8))
mask = torch.ones(2, 8, dtype=torch.int64)
batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq", max=32)


def export(name: str, model: torch.nn.Module, opset: int | None = None) -> None:
    path = f"{name}.onnx" if opset is None else f"{name}_opset{opset}.onnx"
    program = torch.onnx.export(Hidden(model.eval()), (ids, mask), dynamo=True,
                                opset_version=opset, input_names=["ids", "mask"],
                                output_names=["hidden"],
                                dynamic_shapes={"ids": {0: batch, 1: seq},
                                                "mask": {0: batch, 1: seq}})
    program.save(path)
    saved = onnx.load(path)
    for node in saved.graph.node:  # the exporter's stack traces: most of the file
        del node.metadata_props[:]
        node.doc_string = ""
    onnx.save(saved, path)


for name, model in models.items():
    export(name, model)
# Opset 23: scaled_dot_product_attention as ONNX's Attention op (Llama: grouped-query heads, the
# causal and padding mask as a boolean attn_mask, rotary embeddings as RotaryEmbedding; BERT:
# the padding mask only).
for name in ("llama", "bert"):
    export(name, models[name], 23)
print("ok")
