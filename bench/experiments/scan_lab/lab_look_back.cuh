// The generated kernel's two look-back warps (after the _CJ_B compute threads), for the lab's
// variants; include after base.cuh or sel.cuh and lab_common.cuh. The first folds the group's
// earlier tiles and, from the group's last tile, publishes the group's aggregate; the second
// looks back over groups. `stamps` (or null): when each finished, at 8 * tile + 5 and + 6.
#pragma once

__device__ __forceinline__ void lab_look_back(unsigned char* scratch, const _cj_SL& L, int tile,
                                              int g, int q, bool last, int lane, int warp,
                                              _cj_V* wsum, _cj_V* halves,
                                              unsigned long long* stamps) {
  if (warp == _CJ_B / 32) {
    _cj_V inpre = _cj_make(_cj_identity(), 0);
    if (q > 0) inpre = _cj_fold_tiles(scratch, 16, L.tile_values, tile - q, q, lane);
    if (lane == 0) halves[0] = inpre;
    if (stamps != nullptr && lane == 0) stamps[8 * tile + 5] = now();
    _cj_bar(2, _CJ_B + 32);
    if (last && lane == 0) {
      const _cj_V gagg = _cj_comb(inpre, wsum[_CJ_B / 32 - 1]);
      _cj_publish(scratch, L.group_aggregates, L.group_flags, g, gagg, _cj_agg_flag(gagg));
    }
  } else {
    _cj_V G = _cj_make(_cj_identity(), 0);
    if (g > 0) {
      G = _cj_group_look_back(scratch, L.group_flags, L.group_aggregates, L.group_prefixes,
                              L.tile_values, g, lane);
    }
    if (lane == 0) halves[1] = G;
    if (stamps != nullptr && lane == 0) stamps[8 * tile + 6] = now();
  }
}
