<?php
/**
 * Plugin Name: askwpd test AI provider
 * Description: Stands in, for askwpd's tests, for an AI provider plugin
 * (ai-provider-for-openai and its kind): it registers the provider with
 * WordPress's AI Client, so that WordPress registers the Connectors
 * setting connectors_ai_{id}_api_key and its REST settings route takes a
 * key, as the Connectors screen saves it. It accepts any key that is not
 * empty: the real plugins ask the provider; these tests ask nothing.
 *
 * @package askwpd
 */

use WordPress\AiClient\AiClient;
use WordPress\AiClient\Common\Exception\InvalidArgumentException;
use WordPress\AiClient\Providers\Contracts\ModelMetadataDirectoryInterface;
use WordPress\AiClient\Providers\Contracts\ProviderAvailabilityInterface;
use WordPress\AiClient\Providers\Contracts\ProviderInterface;
use WordPress\AiClient\Providers\DTO\ProviderMetadata;
use WordPress\AiClient\Providers\Enums\ProviderTypeEnum;
use WordPress\AiClient\Providers\Http\Contracts\WithRequestAuthenticationInterface;
use WordPress\AiClient\Providers\Http\Enums\RequestAuthenticationMethod;
use WordPress\AiClient\Providers\Http\Traits\WithRequestAuthenticationTrait;
use WordPress\AiClient\Providers\Models\Contracts\ModelInterface;
use WordPress\AiClient\Providers\Models\DTO\ModelConfig;
use WordPress\AiClient\Providers\Models\DTO\ModelMetadata;

if ( ! interface_exists( ProviderInterface::class ) ) {
	return; // WordPress before 7.0: no AI Client.
}

/** Configured once a key that is not empty was handed to it. */
class Askwpd_Test_Availability implements ProviderAvailabilityInterface, WithRequestAuthenticationInterface {
	use WithRequestAuthenticationTrait;

	public function isConfigured(): bool {
		try {
			$data = $this->getRequestAuthentication()->toArray();
		} catch ( Exception $e ) {
			return false;
		}
		return is_string( $data['apiKey'] ?? null ) && '' !== $data['apiKey'];
	}
}

/** Lists no models: the tests never generate through WordPress. */
class Askwpd_Test_Models implements ModelMetadataDirectoryInterface {
	public function listModelMetadata(): array {
		return array();
	}

	public function hasModelMetadata( string $model_id ): bool {
		return false;
	}

	public function getModelMetadata( string $model_id ): ModelMetadata {
		throw new InvalidArgumentException( 'no models' );
	}
}

/** One provider class per id, each with its own availability. */
abstract class Askwpd_Test_Provider implements ProviderInterface {
	const ID   = '';
	const NAME = '';

	private static $availability = array();

	public static function metadata(): ProviderMetadata {
		return new ProviderMetadata( static::ID, static::NAME, ProviderTypeEnum::cloud(), null, RequestAuthenticationMethod::apiKey() );
	}

	public static function model( string $model_id, ?ModelConfig $model_config = null ): ModelInterface {
		throw new InvalidArgumentException( 'no models' );
	}

	public static function availability(): ProviderAvailabilityInterface {
		if ( ! isset( self::$availability[ static::ID ] ) ) {
			self::$availability[ static::ID ] = new Askwpd_Test_Availability();
		}
		return self::$availability[ static::ID ];
	}

	public static function modelMetadataDirectory(): ModelMetadataDirectoryInterface {
		return new Askwpd_Test_Models();
	}
}

class Askwpd_Test_Provider_Openai extends Askwpd_Test_Provider {
	const ID   = 'openai';
	const NAME = 'OpenAI';
}

class Askwpd_Test_Provider_Anthropic extends Askwpd_Test_Provider {
	const ID   = 'anthropic';
	const NAME = 'Anthropic';
}

class Askwpd_Test_Provider_Google extends Askwpd_Test_Provider {
	const ID   = 'google';
	const NAME = 'Google';
}

// Before _wp_connectors_init (init, 15) reads the AI Client's registry.
add_action(
	'init',
	static function () {
		$classes = array( Askwpd_Test_Provider_Openai::class, Askwpd_Test_Provider_Anthropic::class, Askwpd_Test_Provider_Google::class );
		foreach ( $classes as $class ) {
			if ( ! AiClient::defaultRegistry()->hasProvider( $class::ID ) ) {
				AiClient::defaultRegistry()->registerProvider( $class );
			}
		}
	},
	5
);
