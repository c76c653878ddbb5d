/*
 * The keys of the predictor side file (its layout is in hotcold/toolchain.h,
 * "Predictor training"), shared by its writer, its reader and `pack`.
 */
#ifndef HC_CORE_PREDICTOR_FILE_H
#define HC_CORE_PREDICTOR_FILE_H

#define HC_PREDICTOR_ARCH "hotcold.predictor"
#define HC_PRED_KEY_BLOCKS "hotcold.predictor.block_count"
#define HC_PRED_KEY_RECALL "hotcold.predictor.recall"
#define HC_PRED_KEY_PRECISION "hotcold.predictor.precision"
#define HC_PRED_KEY_ACTIVE "hotcold.predictor.active_fraction"
#define HC_PRED_KEY_MODEL "hotcold.predictor.model"
#define HC_KEY_SPARSE_THRESHOLD "powerinfer.sparse_threshold"

#endif /* HC_CORE_PREDICTOR_FILE_H */
