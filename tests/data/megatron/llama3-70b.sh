# Llama 3 70B on 8 nodes of 8 GPUs, as a Megatron-LM launch script writes it
# (hand-written for tests/test_frame.c: every value below is asserted there).
torchrun --nnodes=8 --nproc-per-node 8 pretrain_gpt.py \
    --num-layers 80 \
    --hidden-size 8192 \
    --num-attention-heads 64 \
    --group-query-attention \
    --num-query-groups 8 \
    --ffn-hidden-size 28672 \
    --swiglu \
    --untie-embeddings-and-output-weights \
    --position-embedding-type rope \
    --seq-length 8192 \
    --max-position-embeddings 8192 \
    --vocab-size 128256 \
    --tensor-model-parallel-size 8 \
    --pipeline-model-parallel-size 4 \
    --num-layers-per-virtual-pipeline-stage 5 \
    --context-parallel-size 1 \
    --micro-batch-size 1 \
    --global-batch-size 512 \
    --sequence-parallel \
    --use-distributed-optimizer \
    --overlap-grad-reduce \
    --overlap-param-gather \
    --recompute-granularity full --recompute-method uniform --recompute-num-layers 1 \
    --bf16 \
    --lr 1.5e-4 --min-lr 1.5e-5 --train-iters 1000 \
    --tokenizer-type HuggingFaceTokenizer
