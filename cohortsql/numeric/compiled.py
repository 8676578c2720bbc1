"""The numba-compiled functions behind `cohortsql.numeric.kernels` (imported only when they are used).

Module-level functions so that numba can cache their machine code on disk between processes.
"""

# mypy: ignore-errors

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True, nogil=True)
def one_target(n, s, masks, counts, sums, low, high, d, mean, weight, tie_tolerance, out, squares, row):
    """Scatter, superset-sum and both Shapley sums of one game row; results into row `row` of `out`.

    phi_j = sum_{u containing j} v(u) (w(|u| - 1) + w(|u|)) - sum_u v(u) w(|u|) (see
    `cohortsql.numeric.shapley.shapley_values`): the first sum is split as u = high * 2^half + low, so it
    costs two passes over the 2^d values instead of d."""
    phi, phi2, size, cohort, order, path_size, path_mean, single, with_j, without_j = out
    cells = 1 << d
    n[:] = 0.0
    s[:] = 0.0
    for index in range(low, high):
        n[masks[index]] += counts[index]
        s[masks[index]] += sums[index]
    for bit in range(d):
        step = 1 << bit
        for base in range(0, cells, 2 * step):
            for i in range(base, base + step):
                n[i] += n[i + step]
                s[i] += s[i + step]
    total = 0.0
    total2 = 0.0
    half = d // 2
    lows = 1 << half
    by_low = np.zeros((2, lows))
    by_high = np.zeros((2, cells >> half))
    for u in range(1, cells):  # v(t, {}) = 0 adds nothing
        value = s[u] / n[u] - mean
        square = value * value
        squares[u] += weight * square
        members = 0
        rest = u
        while rest:
            rest &= rest - 1
            members += 1
        total += value * without_j[members]
        total2 += square * without_j[members]
        both = with_j[members] + without_j[members]
        by_low[0, u & (lows - 1)] += value * both
        by_low[1, u & (lows - 1)] += square * both
        by_high[0, u >> half] += value * both
        by_high[1, u >> half] += square * both
    for part in range(lows):
        for j in range(half):
            if part >> j & 1:
                phi[row, j] += by_low[0, part]
                phi2[row, j] += by_low[1, part]
    for part in range(cells >> half):
        for j in range(half, d):
            if part >> (j - half) & 1:
                phi[row, j] += by_high[0, part]
                phi2[row, j] += by_high[1, part]
    for j in range(d):
        phi[row, j] -= total
        phi2[row, j] -= total2
        single[row, j] = n[1 << j]
    size[row] = n[cells - 1]
    cohort[row] = s[cells - 1] / n[cells - 1]
    size_of = np.abs(phi[row])
    largest = size_of.max()
    scale = tie_tolerance * (largest if largest > 0 else 1.0)  # as `cohortsql.numeric.shapley.tie_steps`
    order[row] = np.argsort(-np.rint(size_of / scale), kind="mergesort")
    u = 0
    for k in range(d):
        u |= 1 << order[row, k]
        path_size[row, k] = n[u]
        path_mean[row, k] = s[u] / n[u]


@njit(cache=True, nogil=True, parallel=True)
def fused(starts, masks, counts, sums, d, means, with_j, without_j, groups, weights, slots, tie_tolerance):
    targets = starts.shape[0] - 1
    cells = 1 << d
    phi = np.zeros((targets, d))
    phi2 = np.zeros((targets, d))
    size = np.zeros(targets)
    cohort = np.zeros(targets)
    order = np.zeros((targets, d), dtype=np.int64)
    path_size = np.zeros((targets, d))
    path_mean = np.zeros((targets, d))
    single = np.zeros((targets, d))
    squared_games = np.zeros((groups, slots, cells))
    per_group = (targets + groups - 1) // groups
    for group in prange(groups):
        n = np.empty(cells)
        s = np.empty(cells)
        out = (phi, phi2, size, cohort, order, path_size, path_mean, single, with_j, without_j)
        for t in range(group * per_group, min(targets, (group + 1) * per_group)):
            squares = squared_games[group, t % slots]
            one_target(
                n,
                s,
                masks,
                counts,
                sums,
                starts[t],
                starts[t + 1],
                d,
                means[t],
                weights[t],
                tie_tolerance,
                out,
                squares,
                t,
            )
    return phi, phi2, size, cohort, order, path_size, path_mean, single, squared_games.sum(axis=0)


@njit(cache=True, nogil=True)
def pair_histogram(subjects, measures, targets, parameters, totals, reached):
    """`cohortsql.numeric.pair_masks.PartialHistogram.add`: each target's mask of
    every subject, by the tests of `cohortsql.numeric.pair_masks.similar` (the same arithmetic), and
    the subject's measures added to its cell. Features are (d, rows): for each target and feature one
    tight loop over the subjects (`_similar_subjects`), its test chosen outside it, and one loop over
    them per sum (each sum's values contiguous). These took 500,000 subjects x 100 targets x 12 windows (no value missing, two
    sums, batches of 10,000) from 0.30-0.32 s to 0.20-0.21 s (medians of 9 alternated, several runs); a
    loop over the sums inside the subjects' loop was most of the difference, 32-bit masks none."""
    d, (rows, sums) = parameters[0].shape[0], measures.shape
    masks = np.zeros(rows, dtype=np.int64)
    by_sum = np.ascontiguousarray(measures.T)  # each sum's values contiguous
    holes = _holes(subjects[2])
    for t in range(targets[0].shape[0]):
        masks[:] = 0
        for j in range(d):
            _similar_subjects(j, t, masks, 1 << j, subjects, targets, parameters, holes)
        for s in range(rows):
            reached[t, masks[s]] = True
        for k in range(sums):  # one sum at a time: a loop of known shape
            column = by_sum[k]
            for s in range(rows):
                totals[t, masks[s], k] += column[s]


@njit(cache=True, nogil=True)
def _holes(missing):
    """The features (rows of `missing`) some subject of the batch misses."""
    holes = np.zeros(missing.shape[0], dtype=np.bool_)
    for j in range(missing.shape[0]):
        for s in range(missing.shape[1]):
            if missing[j, s]:
                holes[j] = True
                break
    return holes


@njit(cache=True, nogil=True, inline="always")
def _equal_ints(values, target, masks, bit):
    for s in range(values.shape[0]):
        if values[s] == target:
            masks[s] |= bit


@njit(cache=True, nogil=True, inline="always")
def _equal_floats(values, target, masks, bit):
    nan = target != target
    for s in range(values.shape[0]):
        if values[s] == target or (nan and values[s] != values[s]):  # Spark: NaN = NaN
            masks[s] |= bit


@njit(cache=True, nogil=True, inline="always")
def _near_ints(values, target, limit, masks, bit):
    for s in range(values.shape[0]):
        if float(abs(values[s] - target)) <= limit:
            masks[s] |= bit


@njit(cache=True, nogil=True, inline="always")
def _near_floats(values, target, limit, masks, bit):
    for s in range(values.shape[0]):
        if abs(values[s] - target) <= limit:
            masks[s] |= bit


@njit(cache=True, nogil=True, inline="always")
def _same_bin_ints(values, target, low, width, bins, masks, bit):
    own = _bin(float(target - low), width, bins)
    for s in range(values.shape[0]):
        if _bin(float(values[s] - low), width, bins) == own:
            masks[s] |= bit


@njit(cache=True, nogil=True, inline="always")
def _same_bin_floats(values, target, low, width, bins, masks, bit):
    own = _bin(target - low, width, bins)
    for s in range(values.shape[0]):
        if _bin(values[s] - low, width, bins) == own:
            masks[s] |= bit


@njit(cache=True, nogil=True, inline="always")
def _bin(offset, width, bins):
    number = np.floor(offset / width * bins)
    return float(bins - 1) if number > bins - 1 else number


DISSIMILAR_BLOCK = 256
"""Subjects whose dissimilar players one target's loop holds at once, subject by subject (256 x 1,024
players of one byte is 256 KB: in the cache beside the sums they are added to)."""


@njit(cache=True, nogil=True, parallel=True)
def dissimilar_histogram(subjects, measures, targets, parameters, player_of, ranks, totals):
    """`cohortsql.numeric.dissimilar.DissimilarHistogram.add`: for each target, each subject's players it
    is not similar on (a player is dissimilar when any of its features is, by the tests of
    `pair_histogram`, the same arithmetic), then its measures added to the cell of its count k of them:
    in total at totals[t, m, k, 0] and, for each dissimilar player p, at totals[t, m, k, 1 + p]. With
    `ranks` (one row per target, one rank per player, not empty), to the cell of its smallest
    dissimilar rank instead (totals[t, m, rank, 0] alone; players + 1 when it is similar on every player).

    Targets run in parallel. Each feature's test is one tight loop over the subjects, which flags the
    player and counts k; the flags are then transposed a block of `DISSIMILAR_BLOCK` subjects at a time
    (eight bytes by eight at once, `_transposed`), so that each subject's measures are added to its k's
    row over every player at once (one contiguous, vectorised loop), not one indirect store per (player,
    subject): 0.98 s -> 0.27 s on 8,192 subjects x 15 targets x 1,024 binary features (2 cores, medians
    of 5 alternated with the earlier kernel); the transposition by words, 34 -> 8 ms a target on 20,000
    subjects x 1,024 binary features (it had taken 28 ms of them a byte at a time)."""
    d, (rows, sums) = parameters[0].shape[0], measures.shape
    ranked = ranks.shape[0] > 0
    players = ranks.shape[1] if ranked else totals.shape[3] - 1
    by_sum = np.ascontiguousarray(measures.T)
    holes = _holes(subjects[2])
    for t in prange(targets[0].shape[0]):
        hit = np.zeros(rows, dtype=np.int64)
        # written feature by feature; both sides a multiple of 8 for the transposition by words
        by_player = np.zeros((_eights(players), _eights(rows)), dtype=np.uint8)
        cell = np.zeros(rows, dtype=np.int64)  # k, or the smallest dissimilar rank
        if ranked:
            cell[:] = players + 1
        for j in range(d):
            hit[:] = 0
            _similar_subjects(j, t, hit, 1, subjects, targets, parameters, holes)
            player = player_of[j]
            line = by_player[player]
            if ranked:
                rank = ranks[t, player]
                for s in range(rows):
                    if hit[s] == 0 and rank < cell[s]:
                        cell[s] = rank
            else:
                for s in range(rows):
                    fresh = (hit[s] == 0) & (line[s] == 0)  # the player's first dissimilar feature
                    line[s] |= fresh
                    cell[s] += fresh
        for m in range(sums):
            column, cells = by_sum[m], totals[t, m]
            for s in range(rows):
                cells[cell[s], 0] += column[s]
        if ranked:
            continue
        flags = np.zeros((DISSIMILAR_BLOCK, by_player.shape[0]), dtype=np.uint8)  # read subject by subject
        words, flag_words = by_player.view(np.uint64), flags.view(np.uint64)
        for low in range(0, rows, DISSIMILAR_BLOCK):
            size = min(DISSIMILAR_BLOCK, rows - low)
            _transposed(words, flag_words, low, _eights(size))
            for m in range(sums):
                column, cells = by_sum[m], totals[t, m]
                for s in range(size):
                    weight, line, row = column[low + s], flags[s], cells[cell[low + s]]
                    for p in range(players):
                        row[1 + p] += weight * line[p]


LOW_BYTES = (np.uint64(0x00000000FFFFFFFF), np.uint64(0x0000FFFF0000FFFF), np.uint64(0x00FF00FF00FF00FF))
"""The masks of the low half of each word's halves, quarters and eighths (`_transposed`'s three rounds)."""


@njit(cache=True, nogil=True, inline="always")
def _eights(count):
    """`count` rounded up to a multiple of 8."""
    return (count + 7) // 8 * 8


@njit(cache=True, nogil=True, inline="always")
def _transposed(words, flag_words, low, size):
    """flags[s, p] = by_player[p, low + s] for `size` subjects (`low` and `size` multiples of 8), the
    arrays seen as 64-bit words (`words` (players, rows / 8), `flag_words` (block, players / 8)): each
    8 x 8 square of bytes is 8 words, transposed in three rounds of swapping the off-diagonal halves,
    quarters and eighths of the words (on numba's platforms, all little-endian: byte i of a word is
    its bits 8i to 8i + 7)."""
    square = np.empty(8, dtype=np.uint64)
    first_word = low // 8
    for player_word in range(words.shape[0] // 8):
        for subject_word in range(size // 8):
            for i in range(8):
                square[i] = words[player_word * 8 + i, first_word + subject_word]
            for round_ in range(3):
                shift, mask = np.uint64(32 >> round_), LOW_BYTES[round_]
                step = 4 >> round_
                for i in range(8):
                    if i & step == 0:  # row i against row i + step: swap i's high part with its low part
                        swapped = ((square[i] >> shift) ^ square[i + step]) & mask
                        square[i] ^= swapped << shift
                        square[i + step] ^= swapped
            for j in range(8):
                flag_words[subject_word * 8 + j, player_word] = square[j]


@njit(cache=True, nogil=True, inline="always")
def _similar_subjects(j, t, masks, bit, subjects, targets, parameters, holes):
    """Sets `bit` of masks[s] where subject s is similar to target t on feature j, clears it where a
    missing value makes it dissimilar and leaves it elsewhere (by the tests of
    `cohortsql.numeric.pair_masks.similar`, the same arithmetic), one tight loop over the subjects.
    `subjects` are (d, rows) and `targets` (targets, d) arrays of doubles, integers and missing flags;
    a missing subject value is cleared only for the features in `holes`."""
    s_floats, s_ints, s_missing = subjects
    t_floats, t_ints, t_missing = targets
    code, integer, delta, low_float, low_int, width, bins = parameters
    if t_missing[t, j]:  # a missing target value: similar to missing values alone (none: no flags)
        for s in range(s_missing.shape[1]):
            if s_missing[j, s]:
                masks[s] |= bit
        return
    if code[j] == 0 and integer[j]:
        _equal_ints(s_ints[j], t_ints[t, j], masks, bit)
    elif code[j] == 0:
        _equal_floats(s_floats[j], t_floats[t, j], masks, bit)
    elif code[j] == 3 and not width[j] > 0:  # BINS of a constant column: one bin
        masks |= bit
    elif code[j] == 3 and integer[j]:
        _same_bin_ints(s_ints[j], t_ints[t, j], low_int[j], width[j], bins[j], masks, bit)
    elif code[j] == 3:
        _same_bin_floats(s_floats[j], t_floats[t, j], low_float[j], width[j], bins[j], masks, bit)
    elif integer[j]:  # WINDOW (1) and RELATIVE (2): |x_s - x_t| <= limit
        limit = delta[j] * float(abs(t_ints[t, j])) if code[j] == 2 else delta[j]
        _near_ints(s_ints[j], t_ints[t, j], limit, masks, bit)
    else:
        limit = delta[j] * abs(t_floats[t, j]) if code[j] == 2 else delta[j]
        _near_floats(s_floats[j], t_floats[t, j], limit, masks, bit)
    if holes[j]:  # a missing subject value is not similar to a present one
        for s in range(s_missing.shape[1]):
            if s_missing[j, s]:
                masks[s] &= ~bit
