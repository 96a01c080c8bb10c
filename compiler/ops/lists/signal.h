/* Ops: DFT, STFT, window functions, MelWeightMatrix (see op_list.h). */

/* dft.c: Fourier transforms */
HC_OP(hc_op_dft)
HC_OP(hc_op_stft)

/* window.c: compile-time window functions and mel filterbank */
HC_OP(hc_op_blackman_window)
HC_OP(hc_op_hamming_window)
HC_OP(hc_op_hann_window)
HC_OP(hc_op_mel_weight_matrix)
