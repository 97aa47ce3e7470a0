# -*- coding: utf-8 -*-
# Copyright: Contributors to the trainium.eks project
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write small synthetic BERT pre-training shards in the reference HDF5 layout.

Each shard ``<prefix>_training_<n>.hdf5`` holds, for S samples of length L
and P = max_predictions_per_seq (20 for L=128, 80 for L=512):

====================== ======= ======= ==========================================
dataset                dtype   shape   meaning
====================== ======= ======= ==========================================
input_ids              int32   (S, L)  [CLS] A [SEP] B [SEP], masked, 0-padded
input_mask             int8    (S, L)  1 for real tokens, 0 for padding
segment_ids            int8    (S, L)  0 for [CLS] A [SEP], 1 for B [SEP]
masked_lm_positions    int32   (S, P)  positions of the masked tokens, 0-padded
masked_lm_ids          int32   (S, P)  original token at each position, 0-padded
next_sentence_labels   int8    (S,)    0 = B follows A, 1 = B is random
====================== ======= ======= ==========================================

(the dtypes of the HDF5 files the BERT pre-training data scripts write, gzip
compressed; readers cast to int64.) Token ids follow bert-base-uncased:
0 [PAD], 101 [CLS], 102 [SEP], 103 [MASK], words from 1000 up.

The text is not random: each sample belongs to one of a few "topics", each a
small set of words that follow each other in a fixed cycle, so a masked word
is predictable from its neighbours and the word frequencies are far from
uniform; sentence B continues A's topic unless it is the random one. A tiny
BERT's MLM and NSP losses fall visibly within a few dozen steps.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

PAD, CLS, SEP, MASK = 0, 101, 102, 103
FIRST_WORD = 1000
NUM_TOPICS = 8
WORDS_PER_TOPIC = 24


def max_predictions_for(seq_len: int) -> int:
    """Masked positions per sequence: 20 at 128 and 80 at 512 as in the reference data."""
    if seq_len == 128:
        return 20
    if seq_len == 512:
        return 80
    return max(1, int(round(0.15 * seq_len)))


def _topic_words(vocab_size: int, rng: np.random.Generator) -> np.ndarray:
    needed = NUM_TOPICS * WORDS_PER_TOPIC
    if vocab_size - FIRST_WORD < needed:
        raise ValueError("vocab_size must be at least %d" % (FIRST_WORD + needed))
    words = rng.choice(np.arange(FIRST_WORD, vocab_size), size=needed, replace=False)
    return words.reshape(NUM_TOPICS, WORDS_PER_TOPIC).astype(np.int64)


def _sentence(topic: np.ndarray, length: int, rng: np.random.Generator) -> np.ndarray:
    start = int(rng.integers(len(topic)))
    return topic[(start + np.arange(length)) % len(topic)]


def make_samples(num: int, seq_len: int, vocab_size: int, rng: np.random.Generator,
                 topics: np.ndarray, max_pred: int) -> dict:
    """num samples as a dict of numpy arrays in the reference layout and dtypes."""
    input_ids = np.zeros((num, seq_len), dtype=np.int32)
    input_mask = np.zeros((num, seq_len), dtype=np.int8)
    segment_ids = np.zeros((num, seq_len), dtype=np.int8)
    positions = np.zeros((num, max_pred), dtype=np.int32)
    lm_ids = np.zeros((num, max_pred), dtype=np.int32)
    nsp = np.zeros((num,), dtype=np.int8)
    body = seq_len - 3
    if body < 2:
        raise ValueError("seq_len must be at least 5")
    for i in range(num):
        # Mostly full sequences, some shorter ones (padding as in real data).
        total = body if rng.random() < 0.7 else int(rng.integers(max(2, body // 2), body + 1))
        len_a = int(rng.integers(1, total))
        len_b = total - len_a
        topic_a = int(rng.integers(NUM_TOPICS))
        is_random = rng.random() < 0.5
        topic_b = topic_a
        if is_random:
            topic_b = int((topic_a + rng.integers(1, NUM_TOPICS)) % NUM_TOPICS)
        sent_a = _sentence(topics[topic_a], len_a, rng)
        sent_b = _sentence(topics[topic_b], len_b, rng)
        tokens = np.concatenate([[CLS], sent_a, [SEP], sent_b, [SEP]]).astype(np.int64)
        n = len(tokens)
        segments = np.concatenate([np.zeros(len_a + 2), np.ones(len_b + 1)])
        # Mask 15% of the word positions (never [CLS]/[SEP]), at most max_pred.
        candidates = np.array([p for p in range(n) if tokens[p] not in (CLS, SEP)])
        count = min(max_pred, max(1, int(round(0.15 * len(candidates)))))
        chosen = np.sort(rng.choice(candidates, size=count, replace=False))
        original = tokens[chosen].copy()
        for p in chosen:
            roll = rng.random()
            if roll < 0.8:
                tokens[p] = MASK
            elif roll < 0.9:
                tokens[p] = int(rng.integers(FIRST_WORD, vocab_size))
        input_ids[i, :n] = tokens
        input_mask[i, :n] = 1
        segment_ids[i, :n] = segments
        positions[i, :count] = chosen
        lm_ids[i, :count] = original
        nsp[i] = 1 if is_random else 0
    return {
        "input_ids": input_ids,
        "input_mask": input_mask,
        "segment_ids": segment_ids,
        "masked_lm_positions": positions,
        "masked_lm_ids": lm_ids,
        "next_sentence_labels": nsp,
    }


def write_shards(output_dir: str, num_shards: int, samples_per_shard: int, seq_len: int,
                 vocab_size: int, seed: int, max_pred: int | None = None,
                 prefix: str | None = None) -> list:
    """Writes the shards (each through a temporary name) and returns their paths."""
    import h5py  # pylint: disable=import-outside-toplevel

    max_pred = max_pred or max_predictions_for(seq_len)
    prefix = prefix or "synthetic_seqlen%d" % seq_len
    rng = np.random.default_rng(seed)
    topics = _topic_words(vocab_size, rng)
    os.makedirs(output_dir, exist_ok=True)
    paths = []
    for shard in range(num_shards):
        data = make_samples(samples_per_shard, seq_len, vocab_size, rng, topics, max_pred)
        path = os.path.join(output_dir, "%s_training_%d.hdf5" % (prefix, shard))
        tmp = path + ".tmp"
        with h5py.File(tmp, "w") as out:
            for name, array in data.items():
                out.create_dataset(name, data=array, dtype=array.dtype, compression="gzip")
        os.replace(tmp, path)
        paths.append(path)
    return paths


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--num_shards", type=int, default=4)
    parser.add_argument("--samples_per_shard", type=int, default=256)
    parser.add_argument("--seq_len", type=int, default=128)
    parser.add_argument("--vocab_size", type=int, default=30522)
    parser.add_argument("--max_predictions_per_seq", type=int, default=None,
                        help="default 20 for seq_len 128, 80 for 512, else 15%%")
    parser.add_argument("--seed", type=int, default=12345)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.num_shards < 1 or args.samples_per_shard < 1:
        print("error: --num_shards and --samples_per_shard must be positive", file=sys.stderr)
        return 2
    try:
        paths = write_shards(args.output_dir, args.num_shards, args.samples_per_shard,
                             args.seq_len, args.vocab_size, args.seed,
                             args.max_predictions_per_seq)
    except (ValueError, OSError) as err:
        print("error: %s" % err, file=sys.stderr)
        return 1
    print("wrote %d shards x %d samples (seq_len %d) to %s"
          % (len(paths), args.samples_per_shard, args.seq_len, args.output_dir), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
